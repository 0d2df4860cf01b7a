"""scripts/clag_reach.py: where a CLAG run lost a question's gold, read from its records."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def reach():
    spec = importlib.util.spec_from_file_location("clag_reach", REPO / "scripts" / "clag_reach.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


MEMBERS = {"cluster_0": ["3:0", "3:1", "3:2"], "cluster_1": ["3:3", "3:4"]}


def row(gold, retrieved, searched, mode="cluster", space=3):
    return {"sample_id": "3", "question_id": "q", "evidence": gold, "retrieved_ids": retrieved,
            "retrieval_debug": {"search_mode": mode, "searched_clusters": searched, "search_space_size": space}}


def test_gold_outside_the_searched_clusters_is_out_of_reach(reach):
    r = reach.reach_of(row(["3:0", "3:3"], ["3:0", "3:1"], ["cluster_0"]), MEMBERS)
    assert (r.gold, r.in_reach, r.in_top10, r.searched_globally, r.clusters_searched) == (2, 1, 1, False, 1)


def test_the_first_selected_cluster_is_told_apart_from_the_others(reach):
    """Stage 2 concatenates each cluster's top 10 in the model's order: what the first holds."""
    r = reach.reach_of(row(["3:0", "3:3"], ["3:1", "3:2", "3:4"], ["cluster_1", "cluster_0"]), MEMBERS)
    assert (r.in_reach, r.in_first, r.top10_from_first, r.top10, r.in_top10) == (2, 1, 1, 3, 0)
    globally = reach.reach_of(row(["3:0", "3:3"], ["3:1"], [], mode="global", space=5), MEMBERS)
    assert (globally.in_first, globally.top10_from_first) == (2, None)


def test_a_global_search_has_every_gold_turn_in_reach(reach):
    r = reach.reach_of(row(["3:0", "3:3"], ["3:1"], [], mode="global", space=5), MEMBERS)
    assert (r.in_reach, r.in_top10, r.searched_globally) == (2, 0, True)
    assert reach.reach_of(row([], ["3:1"], []), MEMBERS) is None          # no gold: not scored


def test_the_report_scores_runs_that_recorded_members_and_names_those_that_did_not(reach, tmp_path):
    for name, stats in (("20260101-000000-aaaa", {"sample_id": "3", "turns": 5, "cluster_members": MEMBERS}),
                        ("20260101-000000-bbbb", {"sample_id": "4", "turns": 5})):
        run_dir = tmp_path / "bioasq" / "clag" / "tiny" / name
        run_dir.mkdir(parents=True)
        (run_dir / "status.json").write_text(json.dumps({"state": "complete"}))
        (run_dir / "metrics.json").write_text("{}")
        (run_dir / "memory_stats.json").write_text(json.dumps([stats]))
        rows = [row(["3:0", "3:3"], ["3:0", "3:1"], ["cluster_0"]), row(["3:3"], ["3:3"], ["cluster_1"], space=2)]
        (run_dir / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures = reach.summary(reach.run_reach(tmp_path / "bioasq" / "clag" / "tiny" / "20260101-000000-aaaa"))
    assert figures["gold in reach"] == 75.0 and figures["R@10"] == 75.0 and figures["R@10 of the reachable"] == 100.0
    assert figures["notes searched"] == 2.5 and figures["searched globally"] == 0
    assert figures["gold in the first cluster"] == 75.0 and figures["top 10 from the first cluster"] == 100.0
    lines = reach.report(tmp_path).splitlines()
    assert "| 2 | 0 | 1.00 | 2.50 | 75.00 | 75.00 | 100.00 | 75.00 | 100.00 |" in lines[2]
    assert "cluster members not recorded" in lines[3]
    with pytest.raises(ValueError):
        reach.summary([])
