"""The chance row is the exact mean of the real metric over every ordering of a stream."""

import itertools
import random

import pytest

from eval.metrics.chance import chance_means, chance_scores
from eval.metrics.retrieval import retrieval_scores


def enumerated_mean(stream_size: int, gold: int) -> dict[str, float]:
    ids = [f"t{i}" for i in range(stream_size)]
    totals: dict[str, float] = {}
    count = 0
    for ranking in itertools.permutations(ids):
        for metric, value in retrieval_scores(list(ranking), ids[:gold]).items():
            totals[metric] = totals.get(metric, 0.0) + value
        count += 1
    return {metric: value / count for metric, value in totals.items()}


@pytest.mark.parametrize("stream_size,gold", [(7, 1), (7, 3), (7, 7), (8, 2)])
def test_chance_equals_the_metric_averaged_over_every_ordering(stream_size, gold):
    exact = enumerated_mean(stream_size, gold)
    assert chance_scores(stream_size, gold) == pytest.approx(exact, abs=1e-12)


def test_chance_on_a_stream_longer_than_the_cutoff_matches_sampled_rankings():
    rng = random.Random(0)
    ids = [f"t{i}" for i in range(40)]
    gold = ids[:6]
    samples = [retrieval_scores(rng.sample(ids, len(ids)), gold) for _ in range(20000)]
    expected = chance_scores(40, 6)
    for metric, value in expected.items():
        sampled = sum(s[metric] for s in samples) / len(samples)
        assert sampled == pytest.approx(value, abs=0.01), metric


def test_a_bioasq_like_stream_gives_one_twentieth_precision_and_ten_over_n_recall():
    """20 questions whose gold counts add up to the stream: precision 5%, R@10 = 10/N."""
    golds = [7] * 14 + [6] * 6                      # 134 ids, as BioASQ stream 3
    means = chance_means((134, g) for g in golds)
    assert means["e_precision"] == pytest.approx(0.05)
    assert means["recall@10"] == pytest.approx(10 / 134)
    assert means["recall@5"] == pytest.approx(5 / 134)


def test_a_question_without_gold_in_its_stream_is_refused():
    with pytest.raises(ValueError, match="gold ids"):
        chance_scores(10, 0)


def test_the_misaligned_hypothesis_scores_each_question_against_the_next_questions_gold():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "retrieval_misaligned.py"
    spec = importlib.util.spec_from_file_location("retrieval_misaligned", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = [{"sample_id": "3", "retrieved_ids": ["a", "b"], "evidence": ["a", "b"]},
            {"sample_id": "3", "retrieved_ids": ["c"], "evidence": ["c", "a"]}]
    first, second = module.misaligned_scores(rows)
    assert first["recall@10"] == 0.5          # ids a, b against the second question's gold c, a
    assert second["recall@10"] == 0.0         # id c against the first question's gold a, b
