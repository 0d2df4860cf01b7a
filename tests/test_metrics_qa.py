import math

import pytest

from eval.metrics import score_prediction
from eval.metrics.qa import bleu1, exact_match, f1, locomo_f1, simple_tokens, squad_f1


def test_simple_tokens_strip_only_four_marks():
    assert simple_tokens("The U.S., yes! Really? (x); 'y'") == ["the", "u", "s", "yes", "really", "(x);", "'y'"]


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("7 May 2023", "7 May 2023", 1.0),
        ("the cat sat", "The cat.", 2 * (2 / 3) * 1 / (2 / 3 + 1)),   # P=2/3, R=1
        ("cat cat cat", "cat dog", 2 * 1 * 0.5 / 1.5),                 # sets: repeats ignored
        ("a ; b", "a ; c", 2 * (2 / 3) * (2 / 3) / (4 / 3)),          # ";" is a token
        ("dog", "cat", 0.0),
        ("", "cat", 0.0),
        ("cat", None, 0.0),
        ("...", "cat", 0.0),          # no tokens left
        (2023, "2023", 1.0),          # ints are str()-ed
    ],
)
def test_f1_is_the_papers_set_based_overlap(prediction, reference, expected):
    assert f1(prediction, reference) == pytest.approx(expected)


def test_bleu1_hand_computed():
    # precision 2/3 (the, cat of the, cat, sat); hypothesis longer than reference: no penalty
    assert bleu1("the cat sat", "the cat") == pytest.approx(2 / 3)
    # one matching unigram of one; brevity penalty exp(1 - 3/1)
    assert bleu1("cat", "the cat sat") == pytest.approx(math.exp(-2))
    assert bleu1("The Cat", "the cat") == pytest.approx(1.0)
    # NLTK returns 0 outright when no unigram matches (before any smoothing)
    assert bleu1("dog", "cat") == 0.0
    assert bleu1("", "cat") == 0.0 and bleu1(None, "cat") == 0.0


def test_exact_match_ignores_case_and_outer_spaces():
    assert exact_match("  Paris ", "paris") == 1.0
    assert exact_match("Paris.", "paris") == 0.0


def test_squad_f1_removes_articles_and_punctuation_and_counts_repeats():
    assert squad_f1("The cat.", "a cat") == 1.0
    assert squad_f1("cat cat", "cat") == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_locomo_official_rules_by_category():
    assert locomo_f1("running races", "race", 4) == pytest.approx(2 * 0.5 * 1 / 1.5)   # stemmed
    assert locomo_f1("Paris, London", "London, Berlin", 1) == pytest.approx(0.5)        # sub-answers
    assert locomo_f1("blue", "blue; green", 3) == 1.0                                   # first ; part
    assert locomo_f1("Not mentioned in the conversation", "Yes", 5) == 1.0
    assert locomo_f1("Yes", "Yes", 5) == 0.0


def test_corrected_score_uses_the_true_label_for_category5_only():
    scores = score_prediction("Not mentioned in the conversation", "Yes", 5,
                              true_answer="Not mentioned in the conversation")
    assert scores["f1"] == 0.0 and scores["f1_corrected"] == 1.0
    scores = score_prediction("Paris", "Paris", 4, true_answer="ignored")
    assert scores["f1_corrected"] == scores["f1"] == 1.0


def test_retrieval_metrics_are_none_without_evidence_or_ranking():
    assert score_prediction("a", "a", 4, ["x"], [])["e_f1"] is None
    assert score_prediction("a", "a", 4, None, ["x"])["recall@10"] is None
    assert score_prediction("a", "a", 4, ["x"], ["x"])["recall@10"] == 1.0


def test_rows_without_a_category_count_in_overall_only():
    from eval.metrics import aggregate

    result = aggregate([(None, {"f1": 1.0}), (2, {"f1": 0.0})])
    assert result["overall"]["f1"]["mean"] == 0.5 and result["category_2"]["f1"]["count"] == 1
    assert "category_None" not in result
