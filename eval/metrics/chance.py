"""What a uniformly random ranking of a stream scores on each evidence metric, computed exactly.

A table that shows a retrieval figure should show beside it what chance gives on the same
questions: on BioASQ every stream is exactly its questions' gold sentences, so a random top 10
already has an evidence precision of 1/20 and an R@10 of 10/N. Each figure here is the exact
expectation of :func:`eval.metrics.retrieval.retrieval_scores` over every ordering of a stream of
``stream_size`` ids of which ``gold`` are relevant, not a sample: the number of relevant ids in a
top k is hypergeometric, and each position of a random ranking holds a relevant id with
probability gold / stream_size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from eval.metrics.retrieval import CUTOFF


def _discounts(k: int) -> list[float]:
    return [1 / math.log2(rank + 2) for rank in range(k)]


def _hits_distribution(stream_size: int, gold: int, k: int) -> list[float]:
    """P(h relevant ids in a random top k), h = 0..k (hypergeometric)."""
    total = math.comb(stream_size, k)
    return [math.comb(gold, h) * math.comb(stream_size - gold, k - h) / total for h in range(k + 1)]


def chance_scores(stream_size: int, gold: int, cutoff: int = CUTOFF) -> dict[str, float]:
    """Expected evidence metrics of a random ranking of the whole stream, for one question."""
    if not 0 < gold <= stream_size:
        raise ValueError(f"a question needs 1..{stream_size} gold ids in its stream, not {gold}")
    k = min(cutoff, stream_size)
    hits = k * gold / stream_size                      # expected relevant ids in the top k
    discounts = _discounts(k)
    ideal = sum(_discounts(min(gold, cutoff)))
    # the retrieved list's own ideal re-ordering: given h hits, each of the k positions is
    # relevant with probability h / k, and the ideal puts the h hits first
    retrieved_ideal = sum(p * (h * sum(discounts) / k) / sum(discounts[:h])
                          for h, p in enumerate(_hits_distribution(stream_size, gold, k)) if h)
    return {
        "e_precision": hits / k,
        "e_recall": hits / gold,
        "e_f1": 2 * hits / (k + gold),                 # per question 2h / (k + gold), linear in h
        "recall@5": min(5, stream_size) / stream_size,
        "recall@10": min(10, stream_size) / stream_size,
        "ndcg@10": (gold / stream_size) * sum(discounts) / ideal,
        "ndcg@10_retrieved_ideal": retrieved_ideal,
    }


def chance_means(questions: Iterable[tuple[int, int]], cutoff: int = CUTOFF) -> dict[str, float]:
    """The macro average over questions given as (stream size, gold ids), as the metrics average."""
    rows = [chance_scores(size, gold, cutoff) for size, gold in questions]
    if not rows:
        return {}
    return {metric: sum(r[metric] for r in rows) / len(rows) for metric in rows[0]}
