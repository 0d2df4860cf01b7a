"""RAG: one memory per turn, no LLM at ingest, top-k retrieval over the turns.

The paper does not say how its RAG row was configured (clag.md §11). This follows the most
defensible reading (baselines.md §1): turn-level units holding the same memory text the other
methods store, all-MiniLM-L6-v2, cosine, k = 10, the question itself as the query, and the same
answer prompts as every method, so differences come from memory organisation alone.
``retriever: bm25`` ranks with rank-bm25's Okapi BM25; ``hybrid`` fuses both rankings by
reciprocal rank (RRF).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from rank_bm25 import BM25Okapi

from clag.embed import Embedder
from clag.index import VectorIndex
from clag.types import MemorySystem, Question, Retrieval, Turn

RETRIEVERS = ("dense", "bm25", "hybrid")
_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def memory_line(timestamp: str, content: str) -> str:
    """One retrieved memory in the answer context (A-mem's layout, without note fields)."""
    return f"talk start time:{timestamp}\tmemory content: {content}\n"


def reciprocal_rank_fusion(rankings: list[list[int]], k: int = 60) -> list[int]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda item: (-scores[item], item))


@dataclass(frozen=True)
class RAGOptions:
    """RAG's options (configs/method/rag.yaml): the constructor's schema, checked once here."""

    k: int = 10                     # memories retrieved per question (retrieve_k)
    retriever: str = "dense"
    rrf_k: int = 60                 # reciprocal-rank-fusion constant (hybrid)
    fusion_depth: int = 100         # each ranking's depth before fusion (hybrid)

    def __post_init__(self) -> None:
        if self.retriever not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {RETRIEVERS}, not {self.retriever!r}")


class RAGMemory(MemorySystem):
    #: retrieval reads memory only, so a stream's questions may run concurrently
    concurrent_reads = True

    #: the constructor's schema: the YAML file's keys, checked once into ``self.options``
    options_class: ClassVar[type[RAGOptions]] = RAGOptions

    def __init__(self, embedder: Embedder | None, content_format: str = "reference", **options: Any) -> None:
        self.options = self.options_class(**options)
        if self.options.retriever != "bm25" and embedder is None:
            raise ValueError(f"retriever {self.options.retriever!r} needs an embedder")
        self.embedder = embedder
        self.content_format = content_format
        self.turns: list[Turn] = []
        self.contents: list[str] = []
        self._index: VectorIndex | None = None
        self._bm25: BM25Okapi | None = None
        self._built_for = 0

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.contents.append(turn.memory_content(self.content_format))

    def finalize(self) -> None:
        self._build()

    def _build(self) -> None:
        """Index everything ingested so far in one batch (embedding per turn would be slower)."""
        if self._built_for == len(self.contents):
            return
        if self.options.retriever in ("dense", "hybrid"):
            assert self.embedder is not None
            self._index = VectorIndex(self.embedder.dim, "cosine")
            self._index.add(range(len(self.contents)), self.embedder.encode(self.contents))
        if self.options.retriever in ("bm25", "hybrid") and self.contents:
            self._bm25 = BM25Okapi([bm25_tokens(c) for c in self.contents])
        self._built_for = len(self.contents)

    def _dense(self, query: str, depth: int) -> list[int]:
        assert self._index is not None and self.embedder is not None
        ids, _ = self._index.search(self.embedder.encode_one(query), depth)
        return ids

    def _sparse(self, query: str, depth: int) -> list[int]:
        if self._bm25 is None:
            return []
        scores = np.asarray(self._bm25.get_scores(bm25_tokens(query)))
        order = np.lexsort((np.arange(len(scores)), -scores))   # by score, ties by position
        return order[:depth].tolist()

    def retrieve(self, question: Question) -> Retrieval:
        self._build()
        if not self.contents:
            return Retrieval([], "", {"retriever": self.options.retriever})
        if self.options.retriever == "dense":
            ranked = self._dense(question.text, self.options.k)
        elif self.options.retriever == "bm25":
            ranked = self._sparse(question.text, self.options.k)
        else:
            depth = max(self.options.k, self.options.fusion_depth)
            rankings = [self._dense(question.text, depth), self._sparse(question.text, depth)]
            ranked = reciprocal_rank_fusion(rankings, self.options.rrf_k)[:self.options.k]
        context = "".join(memory_line(self.turns[i].timestamp, self.contents[i]) for i in ranked)
        return Retrieval([self.turns[i].id for i in ranked], context,
                         {"retriever": self.options.retriever, "positions": ranked})

    def stats(self) -> dict[str, Any]:
        return {"memories": len(self.contents), "retriever": self.options.retriever}
