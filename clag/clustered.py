"""What CLAG's router and two-stage retrieval are given: a read-only view of the clusters, the
options each uses, and a typed handle on the structured LLM call.

``clag.memory.CLAGMemory`` owns the state and the options (:class:`CLAGOptions`); the router
(``clag.router``) and the retrieval (``clag.retrieval``) are free functions that receive exactly
what they read — a :class:`ClusterView`, their own options object, the prompt set and ``ask``
— so each can be read, tested and replaced without the memory class, and the imports run one
way: ``memory`` → ``router``/``retrieval`` → ``clustered``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clag.notes import NoteOptions
from clag.prompt_sets import ClusterCandidate

if TYPE_CHECKING:
    from clag.clusters import Cluster
    from clag.index import VectorIndex

#: one structured LLM call: (prompt, JSON schema, call tag, temperature) → (parsed or None, raw text)
Ask = Callable[[str, dict[str, Any], str, float], tuple["dict[str, Any] | None", str]]

ROUTERS = ("agentic", "cosine", "kmeans")
INVALID_ROUTES = ("new_cluster", "nearest")


@dataclass(frozen=True)
class ClusterView:
    """The clusters as routing and selection read them, with each note's content by position
    (for the candidates' example snippets) and the per-cluster retrieval index."""

    clusters: Mapping[str, Cluster]
    contents: Sequence[str]
    index: VectorIndex

    def candidates(self, cluster_ids: Sequence[str], snippet_chars: int) -> list[ClusterCandidate]:
        """The candidates as routing and selection prompts show them (each prompt set words them)."""
        out = []
        for cid in cluster_ids:
            c = self.clusters[cid]
            out.append(ClusterCandidate(cid, len(c.members), c.summary, tuple(c.tags),
                                        tuple(c.examples(self.contents, 3, snippet_chars))))
        return out


@dataclass(frozen=True)
class RouteOptions:
    """What the router reads (built by :attr:`CLAGOptions.routing`)."""

    candidates: int                 # routing_top_k: clusters shown to the SLM
    sim_threshold: float            # below it, the chosen centroid opens a new cluster instead
    temperature: float
    invalid_route: str              # new_cluster (reference) | nearest (a repair)
    example_id: str | None          # route_example_id: None is the prompt's literal "cluster_1"
    constrain_ids: bool             # enum schemas of the candidate ids (a repair)
    bounded: bool                   # bounded JSON schemas (the robust profile)
    snippet_chars: int


@dataclass(frozen=True)
class SelectionOptions:
    """What two-stage retrieval reads (built by :attr:`CLAGOptions.selection`)."""

    candidates: int                 # routing_top_k: nearest centroids shown to the SLM
    top_n: int                      # selection_top_n: clusters the SLM may select
    temperature: float
    retrieve_k: int                 # per selected cluster and for the final list
    rerank: bool                    # stage2_rerank: merge by score instead of concatenating (a repair)
    constrain_ids: bool
    bounded: bool
    snippet_chars: int


@dataclass(frozen=True)
class CLAGOptions(NoteOptions):
    """CLAG's options (``configs/method/clag.yaml``): the note machinery's plus its clusters'.
    Defaults are the reference's (``CLAG_memory.py``); each of its quirks has a named switch,
    reproduced by default (see ``clag.memory``)."""

    router: str = "agentic"
    init_cluster_min_memories: int = 100
    init_n_clusters: int = 3
    cluster_split_threshold: int = 300
    routing_top_k: int = 5
    sim_threshold: float = 0.1
    selection_top_n: int = 10
    profile_samples: int = 3
    snippet_chars: int = 160
    route_temperature: float = 0.2
    profile_temperature: float = 0.3
    selection_temperature: float = 0.7
    kmeans_seed: int = 42
    stale_centroids: bool = True
    refresh_global_index: bool = False
    stage2_rerank: bool = False
    invalid_route: str = "new_cluster"
    route_example_id: str | None = None
    constrain_cluster_ids: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.router not in ROUTERS:
            raise ValueError(f"router must be one of {ROUTERS}, not {self.router!r}")
        if self.invalid_route not in INVALID_ROUTES:
            raise ValueError("invalid_route must be new_cluster or nearest")

    @property
    def routes_while_ingesting(self) -> bool:
        """The K-Means ablation clusters the final memory instead (evolution stays global)."""
        return self.router != "kmeans"

    @property
    def routing(self) -> RouteOptions:
        return RouteOptions(self.routing_top_k, self.sim_threshold, self.route_temperature,
                            self.invalid_route, self.route_example_id, self.constrain_cluster_ids,
                            self.bounded_schemas, self.snippet_chars)

    @property
    def selection(self) -> SelectionOptions:
        return SelectionOptions(self.routing_top_k, self.selection_top_n, self.selection_temperature,
                                self.retrieve_k, self.stage2_rerank, self.constrain_cluster_ids,
                                self.bounded_schemas, self.snippet_chars)
