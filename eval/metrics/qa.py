"""Answer metrics: the paper's F1 and BLEU-1, and the common variants under their own names.

``f1`` and ``bleu1`` are A-mem's ``utils.calculate_metrics`` (which CLAG reuses unchanged):
- an empty prediction or reference scores 0 on every metric; both are then ``str().strip()``-ed;
- F1 is *set-based* token overlap, tokens = lower-cased text with only ``. , ! ?`` turned into
  spaces, split on whitespace (no article removal, other punctuation stays, repeats not counted);
- BLEU-1 is NLTK ``sentence_bleu`` on ``word_tokenize(lower())`` with weights (1, 0, 0, 0) and
  ``SmoothingFunction().method1``.
``squad_f1`` is SQuAD's normalised, multiset F1; ``locomo_f1`` is LoCoMo's official QA score
(``task_eval/evaluation.py``: Porter-stemmed multiset F1, per-category rules).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

from nltk.stem import PorterStemmer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from eval.metrics.tokenize import word_tokenize

_SMOOTH = SmoothingFunction().method1
_STEMMER = PorterStemmer()
_PUNCT = set(string.punctuation)


def _blank(prediction: object, reference: object) -> bool:
    # the reference tests truthiness before str(): None, "" and 0 all score zero
    return not prediction or not reference


def simple_tokens(text: str) -> list[str]:
    """A-mem's ``simple_tokenize``: lower-case, ``. , ! ?`` → space, split."""
    lowered = str(text).lower()
    for mark in ".,!?":
        lowered = lowered.replace(mark, " ")
    return lowered.split()


def f1(prediction: object, reference: object) -> float:
    """The paper's F1: set-based overlap of :func:`simple_tokens`."""
    if _blank(prediction, reference):
        return 0.0
    pred = set(simple_tokens(str(prediction).strip()))
    ref = set(simple_tokens(str(reference).strip()))
    if not pred or not ref:
        return 0.0
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: object, reference: object) -> float:
    """The paper's BLEU-1 (NLTK sentence BLEU, unigram weights, smoothing method1)."""
    if _blank(prediction, reference):
        return 0.0
    hypothesis = word_tokenize(str(prediction).strip().lower())
    ref_tokens = word_tokenize(str(reference).strip().lower())
    if not hypothesis or not ref_tokens:
        return 0.0
    return float(sentence_bleu([ref_tokens], hypothesis, weights=(1, 0, 0, 0),
                               smoothing_function=_SMOOTH))


def exact_match(prediction: object, reference: object) -> float:
    """A-mem's exact match: case-insensitive equality after strip."""
    if _blank(prediction, reference):
        return 0.0
    return float(str(prediction).strip().lower() == str(reference).strip().lower())


def _squad_normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _multiset_f1(pred: list[str], ref: list[str]) -> float:
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def squad_f1(prediction: object, reference: object) -> float:
    """SQuAD v1.1 F1: lower, strip punctuation and articles, multiset token overlap."""
    if _blank(prediction, reference):
        return 0.0
    return _multiset_f1(_squad_normalize(str(prediction)).split(),
                        _squad_normalize(str(reference)).split())


def _locomo_normalize(text: str) -> str:
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stem(word)


def _locomo_token_f1(prediction: str, reference: str) -> float:
    return _multiset_f1([_stem(w) for w in _locomo_normalize(prediction).split()],
                        [_stem(w) for w in _locomo_normalize(reference).split()])


def locomo_f1(prediction: object, reference: object, category: int | None) -> float:
    """LoCoMo's official score: category 1 averages sub-answer F1 (comma-split); category 3
    scores against the first ``;`` part; category 5 is 1 when the prediction says
    "not mentioned" / "no information available"; the rest are stemmed multiset F1.

    For category 5 this scores abstention, so pass the *true* answer's question; the paper's
    convention (reference = adversarial answer) is what :func:`f1` sees.
    """
    pred = "" if prediction is None else str(prediction)
    if category == 5:
        lowered = pred.lower()
        return float("no information available" in lowered or "not mentioned" in lowered)
    if reference is None or str(reference) == "":
        return 0.0
    ref = str(reference)
    if category == 3:
        ref = ref.split(";")[0].strip()
    if category == 1:
        preds = [p.strip() for p in pred.split(",")]
        refs = [r.strip() for r in ref.split(",")]
        return sum(max(_locomo_token_f1(p, r) for p in preds) for r in refs) / len(refs)
    return _locomo_token_f1(pred, ref)


#: the per-question answer metrics every run records
ANSWER_METRICS = ("f1", "bleu1", "exact_match", "squad_f1", "locomo_f1")


def score_answer(prediction: object, reference: object, category: int | None = None) -> dict[str, float]:
    return {
        "f1": f1(prediction, reference),
        "bleu1": bleu1(prediction, reference),
        "exact_match": exact_match(prediction, reference),
        "squad_f1": squad_f1(prediction, reference),
        "locomo_f1": locomo_f1(prediction, reference, category),
    }
