"""The F1 gap split by which of two methods retrieved more of the gold."""

import pytest

from scripts.pair_breakdown import GROUPS, Paired, breakdown, check_ranked, pair


def scores(f1, recall):
    return {"f1": f1, "recall@10": recall}


def test_questions_are_paired_by_key_and_grouped_by_r_at_10():
    a = {"3::q1": scores(0.0, 0.2), "3::q2": scores(0.5, 0.5), "3::q3": scores(1.0, 0.9), "4::q9": scores(1.0, 1.0)}
    b = {"3::q1": scores(0.6, 0.8), "3::q2": scores(0.4, 0.5), "3::q3": scores(0.0, 0.1),
         "3::q4": scores(0.0, 0.0), "3::q5": {"f1": 0.3}}          # q4, q5: one side only / no gold
    pairs = pair(a, b)
    assert [p.group for p in pairs] == [GROUPS[2], GROUPS[1], GROUPS[0]]


def test_each_group_gives_its_means_and_the_total_adds_up():
    pairs = [Paired(0.0, 0.6, 0.2, 0.8), Paired(0.2, 0.6, 0.1, 0.9), Paired(0.5, 0.4, 0.5, 0.5)]
    rows = {r["group"]: r for r in breakdown(pairs)}
    assert rows[GROUPS[0]]["questions"] == 0 and "F1 a" not in rows[GROUPS[0]]   # kept, empty
    less = rows[GROUPS[2]]
    assert less["questions"] == 2
    assert less["F1 a"] == pytest.approx(10.0) and less["F1 b"] == pytest.approx(60.0)
    assert less["F1 a − b"] == pytest.approx(-50.0)
    low, high = less["CI"]
    assert low <= -50.0 <= high
    assert rows["all"]["questions"] == 3
    assert rows["all"]["F1 a − b"] == pytest.approx(100 * (-0.6 - 0.4 + 0.1) / 3)


def test_a_method_without_a_ranking_of_turns_is_refused():
    class Group:
        predictions = [{"retrieval_ranked": True}, {"retrieval_ranked": False}]

    with pytest.raises(SystemExit, match="not a ranking of turns"):
        check_ranked(Group(), "gam")
    Group.predictions = [{"retrieval_ranked": True}, {}]
    check_ranked(Group(), "rag")
