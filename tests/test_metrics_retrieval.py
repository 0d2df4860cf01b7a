import math
import random

import pytest
import pytrec_eval

from eval.metrics.aggregate import aggregate
from eval.metrics.retrieval import retrieval_scores


def test_hand_computed_case():
    ranked = ["a", "x", "b", "y", "z", "c"]            # hits at ranks 1, 3, 6
    s = retrieval_scores(ranked, ["a", "b", "c", "d"])
    assert s["e_precision"] == pytest.approx(3 / 6)     # |retrieved| = 6 < 10
    assert s["e_recall"] == s["recall@10"] == pytest.approx(3 / 4)
    assert s["e_f1"] == pytest.approx(2 * 0.5 * 0.75 / 1.25)
    assert s["recall@5"] == pytest.approx(2 / 4)
    dcg = 1 + 1 / math.log2(4) + 1 / math.log2(7)
    idcg = sum(1 / math.log2(i + 2) for i in range(4))
    assert s["ndcg@10"] == pytest.approx(dcg / idcg)
    assert s["ndcg@10_retrieved_ideal"] == pytest.approx(dcg / sum(1 / math.log2(i + 2) for i in range(3)))


def test_no_hits_and_duplicates():
    s = retrieval_scores(["x", "x", "y"], ["a"])
    assert s["e_precision"] == 0 and s["e_f1"] == 0 and s["ndcg@10"] == 0
    assert retrieval_scores(["a", "a", "b"], ["b"])["recall@5"] == 1.0
    assert retrieval_scores([], ["a"])["e_precision"] == 0.0
    with pytest.raises(ValueError):
        retrieval_scores(["a"], [])


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_trec_eval_on_random_runs(seed):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(40)]
    qrels, run, ours = {}, {}, {}
    for q in range(30):
        gold = rng.sample(docs, rng.randint(1, 15))
        ranking = rng.sample(docs, rng.randint(10, 25))   # >= 10 retrieved: P@10 == E-Prec
        qid = f"q{q}"
        qrels[qid] = {d: 1 for d in gold}
        run[qid] = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}
        ours[qid] = retrieval_scores(ranking, gold)
    measures = {"recall_5", "recall_10", "ndcg_cut_10", "P_10"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    for qid, s in ours.items():
        assert s["recall@5"] == pytest.approx(trec[qid]["recall_5"])
        assert s["recall@10"] == pytest.approx(trec[qid]["recall_10"])
        assert s["ndcg@10"] == pytest.approx(trec[qid]["ndcg_cut_10"])
        assert s["e_precision"] == pytest.approx(trec[qid]["P_10"])


def test_aggregate_pools_questions_and_keeps_counts():
    rows = [(1, {"f1": 1.0, "e_f1": None}), (1, {"f1": 0.0, "e_f1": 0.5}), (2, {"f1": 0.5, "e_f1": 1.0})]
    out = aggregate(rows)
    assert out["questions"] == 3
    assert out["overall"]["f1"] == {"mean": pytest.approx(0.5), "count": 3}
    assert out["overall"]["e_f1"] == {"mean": pytest.approx(0.75), "count": 2}
    assert out["category_1"]["f1"]["mean"] == pytest.approx(0.5)
    assert out["category_2"]["e_f1"]["count"] == 1
