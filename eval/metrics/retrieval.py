"""Evidence-retrieval metrics over a ranked list of turn ids.

Definitions (per question, then macro-averaged over questions that have gold evidence):
- ``e_precision`` = |top-10 ∩ gold| / |top-10| (0 when nothing was retrieved);
- ``e_recall`` = |top-10 ∩ gold| / |gold|, which equals ``recall@10`` — as in the paper's table,
  where E-Recall and R@10 coincide for every method;
- ``e_f1`` = the per-question harmonic mean of the two (0 without hits), then averaged — the
  paper's E-F1 is below both E-Prec and E-Recall, so it is a macro average of per-question F1;
- ``recall@k`` = |top-k ∩ gold| / |gold|;
- ``ndcg@10`` is trec_eval's ``ndcg_cut_10`` with binary gains: DCG = Σ rel_i / log2(i + 1) over
  the top 10, IDCG from min(|gold|, 10) relevant items (checked against pytrec_eval in tests).

The paper's nDCG@10 is not reproducible with that definition (RAG's 20.19 with 4.6% precision
is out of reach of standard nDCG); its code is unreleased. ``ndcg@10_retrieved_ideal``
normalises by the ideal re-ordering of the retrieved list itself, one reading that fits the
published numbers better. Tables say which one they show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CUTOFF = 10


def dedup(ranked: Sequence[str]) -> list[str]:
    """Keep the first occurrence of every id (a memory may be reached twice)."""
    seen: set[str] = set()
    out = []
    for item in ranked:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _dcg(gains: Sequence[int]) -> float:
    return sum(g / math.log2(rank + 2) for rank, g in enumerate(gains))


def retrieval_scores(ranked: Sequence[str], gold: Sequence[str], cutoff: int = CUTOFF) -> dict[str, float]:
    """All evidence metrics for one question. ``gold`` must be non-empty."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("retrieval metrics need at least one gold id")
    ranking = dedup(ranked)
    top = ranking[:cutoff]
    gains = [1 if item in gold_set else 0 for item in top]
    hits = sum(gains)
    precision = hits / len(top) if top else 0.0
    recall = hits / len(gold_set)
    e_f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    ideal = _dcg([1] * min(len(gold_set), cutoff))
    retrieved_ideal = _dcg(sorted(gains, reverse=True))
    dcg = _dcg(gains)
    return {
        "e_precision": precision,
        "e_recall": recall,
        "e_f1": e_f1,
        "recall@5": sum(1 for item in ranking[:5] if item in gold_set) / len(gold_set),
        "recall@10": sum(1 for item in ranking[:10] if item in gold_set) / len(gold_set),
        "ndcg@10": dcg / ideal,
        "ndcg@10_retrieved_ideal": dcg / retrieved_ideal if retrieved_ideal else 0.0,
    }


RETRIEVAL_METRICS = ("e_precision", "e_recall", "e_f1", "recall@5", "recall@10", "ndcg@10",
                     "ndcg@10_retrieved_ideal")
