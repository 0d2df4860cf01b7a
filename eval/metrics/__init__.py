"""Metrics: answer quality (:mod:`.qa`), evidence retrieval (:mod:`.retrieval`), aggregation."""

from __future__ import annotations

from collections.abc import Sequence

from eval.metrics.aggregate import aggregate
from eval.metrics.qa import ANSWER_METRICS, bleu1, f1, score_answer
from eval.metrics.retrieval import RETRIEVAL_METRICS, retrieval_scores

ADVERSARIAL = 5


def score_prediction(
    prediction: object,
    answer: object,
    category: int | None = None,
    retrieved_ids: Sequence[str] | None = None,
    evidence: Sequence[str] | None = None,
    true_answer: object = None,
) -> dict[str, float | None]:
    """Every per-question metric. Retrieval metrics are ``None`` without gold evidence or
    without a retrieved list; ``*_corrected`` score LoCoMo category 5 against its true label."""
    scores: dict[str, float | None] = dict(score_answer(prediction, answer, category))
    if category == ADVERSARIAL and true_answer is not None:
        scores["f1_corrected"] = f1(prediction, true_answer)
        scores["bleu1_corrected"] = bleu1(prediction, true_answer)
    else:
        scores["f1_corrected"] = scores["f1"]
        scores["bleu1_corrected"] = scores["bleu1"]
    if evidence and retrieved_ids is not None:
        scores.update(retrieval_scores(list(retrieved_ids), list(evidence)))
    else:
        scores.update({name: None for name in RETRIEVAL_METRICS})
    return scores


__all__ = ["ANSWER_METRICS", "RETRIEVAL_METRICS", "aggregate", "retrieval_scores",
           "score_answer", "score_prediction"]
