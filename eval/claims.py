"""The paper's claims as comparisons the runs can decide, and the rule that decides them.

A claim says one method beats its rivals on one metric and dataset ("CLAG answers best": F1 of
CLAG above RAG's, A-mem's, GAM's and MemoryOS's on BioASQ). Each pair is decided from the paired
bootstrap interval of ``method − rival`` over the questions both answered: the interval wholly
above zero supports the claim, wholly below contradicts it, across zero cannot decide it. The
claim as a whole is supported only when every pair supports it — an intersection–union test, so
the 95% level needs no correction for the number of rivals — and contradicted when any rival is
better; the latter is read at 95% per rival, uncorrected, which the table says.

The claims are stated here, not inferred from the published tables, so that a table can never
choose the comparison after seeing the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval.stats import Interval

SUPPORTS = "supports"
CONTRADICTS = "contradicts"
UNDECIDED = "cannot decide"
NOT_RUN = "not run yet"


@dataclass(frozen=True)
class Claim:
    """``method`` scores higher than each of ``rivals`` on ``metric`` (``data``). ``published``
    names the paper's table holding both figures (``eval.tables.PAPER_TABLES``), None for a claim
    this harness makes of its own variant."""

    statement: str
    data: str
    metric: str
    method: str
    rivals: tuple[str, ...]
    published: str | None


_BASELINES = ("rag", "amem", "gam", "memoryos")

#: the paper's claims, from its three tables (Qwen3-0.6B), then this harness's own
CLAIMS: tuple[Claim, ...] = (
    *(Claim("CLAG answers best", data, "f1", "clag", _BASELINES, "final_answer")
      for data in ("locomo", "hotpotqa", "bioasq")),
    *(Claim("CLAG retrieves evidence better", "bioasq", metric, "clag", ("rag", "amem"), "bioasq_retrieval")
      for metric in ("recall@10", "ndcg@10")),
    Claim("agentic clustering beats geometric", "bioasq", "f1", "clag", ("clag_kmeans", "clag_cosine"),
          "clustering_ablation"),
    *(Claim("clag_plus (the reference's quirks repaired) beats CLAG", data, "f1", "clag_plus", ("clag",),
            None) for data in ("locomo", "hotpotqa", "bioasq")),
)


def decide(interval: Interval | None) -> str:
    """One pair: where the interval of ``method − rival`` lies against zero."""
    if interval is None:
        return NOT_RUN
    if interval.low > 0:
        return SUPPORTS
    if interval.high < 0:
        return CONTRADICTS
    return UNDECIDED


def decide_claim(pairs: Sequence[str]) -> str:
    """The claim from its pairs: any rival better contradicts it, every rival worse supports it;
    otherwise it cannot be decided (yet, while a pair has no runs)."""
    if CONTRADICTS in pairs:
        return CONTRADICTS
    if pairs and all(p == SUPPORTS for p in pairs):
        return SUPPORTS
    return f"{UNDECIDED} yet" if NOT_RUN in pairs else UNDECIDED
