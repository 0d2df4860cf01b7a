"""The paper's claims decided from paired intervals: the rule, and the table built from runs."""

import pytest

from eval.claims import CLAIMS, CONTRADICTS, NOT_RUN, SUPPORTS, UNDECIDED, decide, decide_claim
from eval.runs import find_runs, latest_runs
from eval.stats import Interval
from eval.tables import build_tables, claims_table
from tests.test_tables import make_run, runs_root  # noqa: F401  (the fixture)


def test_a_pair_is_decided_by_where_its_interval_lies_against_zero():
    assert decide(Interval(0.2, 0.01, 0.4, 60)) == SUPPORTS
    assert decide(Interval(-0.2, -0.4, -0.01, 60)) == CONTRADICTS
    assert decide(Interval(0.2, -0.01, 0.4, 60)) == UNDECIDED
    assert decide(Interval(0.0, 0.0, 0.0, 60)) == UNDECIDED          # an interval touching 0 decides nothing
    assert decide(None) == NOT_RUN


def test_a_claim_needs_every_rival_beaten_and_falls_to_any_rival_that_wins():
    assert decide_claim([SUPPORTS, SUPPORTS]) == SUPPORTS
    assert decide_claim([SUPPORTS, UNDECIDED]) == UNDECIDED
    assert decide_claim([SUPPORTS, CONTRADICTS, NOT_RUN]) == CONTRADICTS
    assert decide_claim([SUPPORTS, NOT_RUN]) == f"{UNDECIDED} yet"
    assert decide_claim([]) == UNDECIDED


def test_the_claims_name_methods_and_metrics_the_tables_know():
    from eval.tables import METHOD_ORDER, METRIC_LABELS, PAPER_TABLES

    for claim in CLAIMS:
        assert claim.metric in METRIC_LABELS and claim.method not in claim.rivals
        assert {claim.method, *claim.rivals} <= set(METHOD_ORDER)
        assert claim.published is None or claim.metric in PAPER_TABLES[claim.published][2]


def rows_of(table, statement, data="bioasq"):
    return {row[3]: row for row in table.rows if row[0] == statement and row[1] == data}


def test_the_claims_table_pairs_each_rival_with_the_claimed_winner(runs_root):  # noqa: F811
    # clag answers all 4 questions right; clag_cosine half of each answer; clag_kmeans as well as clag
    make_run(runs_root, "bioasq", "clag_kmeans", "tiny", "20260101-000000-cccc", ["x y"] * 4, ["x y"] * 4)
    table = claims_table(latest_runs(find_runs(runs_root)), "tiny", resamples=200, profile="robust")
    ablation = rows_of(table, "agentic clustering beats geometric")
    cosine = ablation["clag − clag_cosine"]
    assert cosine[4] == "+7.23"                                      # 22.01 − 14.78, the paper's
    interval = cosine[5]
    assert interval.estimate == pytest.approx(1 / 3) and interval.low == pytest.approx(1 / 3) and cosine[6] == 4
    assert cosine[7] == "1.00×" and cosine[8] == SUPPORTS
    assert ablation["clag − clag_kmeans"][8] == UNDECIDED
    assert ablation["the claim"][8] == UNDECIDED
    best = rows_of(table, "CLAG answers best")
    assert best["clag − rag"][5] is None and best["clag − rag"][8] == NOT_RUN
    assert best["the claim"][8] == f"{UNDECIDED} yet"
    assert not rows_of(table, "CLAG answers best", "locomo")         # no run answered LoCoMo


def test_a_rival_that_wins_contradicts_the_claim_and_tables_write_it(runs_root, tmp_path):  # noqa: F811
    make_run(runs_root, "bioasq", "rag", "tiny", "20260101-000000-dddd", ["x y z"] * 4, ["x y z"] * 4)
    make_run(runs_root, "bioasq", "clag", "tiny", "20260102-000000-eeee", ["x"] * 4, ["x y z"] * 4)
    tables = {t.name: t for t in build_tables(runs_root, resamples=200)["tiny"]}
    best = rows_of(tables["claims"], "CLAG answers best")
    assert best["clag − rag"][8] == CONTRADICTS and best["the claim"][8] == CONTRADICTS
