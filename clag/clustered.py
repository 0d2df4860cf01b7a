"""What CLAG's router and two-stage retrieval read from a clustered memory, as a protocol.

``clag.memory.CLAGMemory`` calls the router and the retrieval with itself; they take it as this
protocol rather than importing the class that imports them, so the arrows run one way:
``memory`` → ``router``, ``retrieval`` → ``clustered``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from clag.clusters import Cluster
    from clag.embed import Embedder
    from clag.index import VectorIndex
    from clag.notes import MemoryNote
    from clag.prompt_sets import PromptSet


class ClusteredMemory(Protocol):
    notes: list[MemoryNote]
    clusters: dict[str, Cluster]
    cluster_index: VectorIndex
    embedder: Embedder
    prompts: PromptSet
    bounded: bool                       # bounded JSON schemas (the robust profile)
    constrain_cluster_ids: bool         # enum schemas of the candidate ids (a repair)
    routing_top_k: int
    selection_top_n: int
    retrieve_k: int
    sim_threshold: float
    snippet_chars: int
    route_temperature: float
    selection_temperature: float
    route_example_id: str | None
    invalid_route: str
    stage2_rerank: bool

    def ask(self, prompt: str, schema: dict[str, Any], tag: str, temperature: float = 0.7
            ) -> tuple[dict[str, Any] | None, str]:
        """One structured LLM call: (parsed reply or None, raw text)."""
        ...

    def global_neighbours(self, query: str, k: int) -> list[int]:
        """The positions of the ``k`` notes nearest to ``query`` over the whole memory."""
        ...
