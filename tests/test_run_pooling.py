"""Runs of one setup made one stream at a time read as one run in the tables."""

import json

import pytest
import yaml

from eval.results import frame_of
from eval.runs import find_runs, latest_runs
from eval.tables import NotComparable, build_tables, cost, paper_table, to_markdown
from tests.test_tables import make_run


def stream_run(root, name, stream, predictions, answers, method="clag", seed=42, flags=(), ranked=True):
    """A complete run of ``method`` on one BioASQ stream of 10 turns, its config naming that
    stream; every question has 2 gold turns."""
    run_dir = make_run(root, "bioasq", method, "tiny", name, predictions, answers)
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    for row in rows:
        row.update(sample_id=stream, evidence=[f"{stream}:0", f"{stream}:1"], retrieval_ranked=ranked)
    (run_dir / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "memory_stats.json").write_text(json.dumps([{"sample_id": stream, "turns": 10}]))
    config = {"method": {"name": method}, "seed": seed, "results_root": str(root),
              "data": {"name": "bioasq", "subset": {"sample_ids": [int(stream)], "turns": None}}}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    (run_dir / "health.json").write_text(json.dumps({"healthy": not flags, "flags": list(flags),
                                                     "overall": {"capped_rate": 0.0, "unparsable_rate": 0.0}}))
    return run_dir


def test_runs_of_one_setup_on_other_streams_pool_into_one_cell(tmp_path):
    stream_run(tmp_path, "20260101-000000-aaaa", "3", ["x y"] * 2, ["x y"] * 2)
    stream_run(tmp_path, "20260102-000000-aaaa", "4", ["nope"] * 2, ["x y"] * 2)
    group = latest_runs(find_runs(tmp_path))[("clag", "bioasq", "tiny")]
    assert group.streams == ["3", "4"]
    assert group.metrics["questions"] == 4
    assert group.mean("f1") == 50.0
    assert group.name == "20260101-000000-aaaa + 20260102-000000-aaaa"
    assert group.ledger["by_tag"]["note"]["calls"] == 20          # 10 per run, summed
    frame = frame_of([group])
    assert sorted(frame["run"].unique()) == ["20260101-000000-aaaa", "20260102-000000-aaaa"]
    assert len(frame) == 4
    assert cost({group.key: group}, "tiny").rows[0][2:4] == [20, 1.0]     # 20 memories, 20 ingest calls


def test_a_rerun_of_a_stream_replaces_it_and_another_setup_is_not_pooled(tmp_path):
    stream_run(tmp_path, "20260101-000000-aaaa", "3", ["nope"] * 2, ["x y"] * 2)
    stream_run(tmp_path, "20260102-000000-aaaa", "4", ["x y"] * 2, ["x y"] * 2)
    stream_run(tmp_path, "20260103-000000-aaaa", "3", ["x y"] * 2, ["x y"] * 2)        # stream 3 again
    group = latest_runs(find_runs(tmp_path))[("clag", "bioasq", "tiny")]
    assert group.name == "20260103-000000-aaaa + 20260102-000000-aaaa" and group.mean("f1") == 100.0
    stream_run(tmp_path, "20260104-000000-bbbb", "7", ["x y"] * 2, ["x y"] * 2, seed=43)   # another seed
    group = latest_runs(find_runs(tmp_path))[("clag", "bioasq", "tiny")]
    assert group.name == "20260104-000000-bbbb" and group.streams == ["7"]


def test_a_flag_on_one_pooled_run_flags_the_cell_and_names_that_run(tmp_path):
    stream_run(tmp_path, "20260101-000000-aaaa", "3", ["x y"] * 2, ["x y"] * 2)
    stream_run(tmp_path, "20260102-000000-aaaa", "4", ["x y"] * 2, ["x y"] * 2,
               flags=("5 of 20 keywords replies copied the prompt's example (> 20%)",))
    runs = latest_runs(find_runs(tmp_path))
    group = runs[("clag", "bioasq", "tiny")]
    assert not group.health["healthy"]
    assert group.health["flags"] == ["20260102-000000-aaaa: 5 of 20 keywords replies copied the prompt's "
                                     "example (> 20%)"]
    table = paper_table("clustering_ablation", runs, "tiny", resamples=20)
    clag_f1 = next(row for row in table.rows if row[0] == "CLAG (agentic)" and row[2] == "F1")
    assert type(clag_f1[3]).__name__ == "Flagged"
    assert any("20260102-000000-aaaa: 5 of 20 keywords" in note for note in table.notes)


def test_the_retrieval_table_closes_with_the_exact_chance_row_and_marks_unranked_ids(tmp_path):
    stream_run(tmp_path, "20260101-000000-aaaa", "3", ["x y"] * 2, ["x y"] * 2)
    stream_run(tmp_path, "20260101-000000-cccc", "3", ["x y"] * 2, ["x y"] * 2, method="gam", ranked=False)
    tables = {t.name: t for t in build_tables(tmp_path, resamples=20)["tiny"]}
    rows = {row[0]: row for row in tables["retrieval"].rows}
    # a random ranking of 10 turns with 2 gold: precision 2/10, R@5 5/10, R@10 10/10
    assert rows["chance (random ranking)"][2:9] == ["turns, random", 2, 20.0, 100.0, pytest.approx(100 / 3),
                                                     50.0, 100.0]
    assert rows["clag"][2] == "turns, ranked"
    assert rows["gam"][2] == "page lines, unranked"
    assert all(isinstance(v, NotComparable) for v in rows["gam"][4:10])
    assert "‡" in to_markdown(tables["retrieval"])
    retrieval = tables["bioasq_retrieval"]
    assert [r[3] for r in retrieval.rows if r[0] == "chance (random ranking)"][:2] == [20.0, 100.0]


def test_every_setup_found_gets_its_own_paper_tables_without_a_flag(tmp_path):
    stream_run(tmp_path, "20260101-000000-aaaa", "3", ["x y"] * 2, ["x y"] * 2)
    stream_run(tmp_path, "20260101-000000-bbbb", "3", ["x"] * 2, ["x y"] * 2,
               method="clag@reference+openai+llama-cpp-python")
    names = [t.name for t in build_tables(tmp_path, resamples=20)["tiny"]]
    assert "clustering_ablation@robust" in names
    assert "clustering_ablation@reference+openai+llama-cpp-python" in names
    table = next(t for t in build_tables(tmp_path, resamples=20)["tiny"]
                 if t.name == "clustering_ablation@reference+openai+llama-cpp-python")
    clag = next(row for row in table.rows if row[0] == "CLAG (agentic)" and row[2] == "F1")
    assert round(clag[3].value, 2) == 66.67 and "reference+openai+llama-cpp-python" in table.title  # † subset


def test_tables_on_chosen_streams_leave_the_other_streams_runs_out(tmp_path):
    stream_run(tmp_path, "20260101-000000-aaaa", "3", ["x y"] * 2, ["x y"] * 2, method="rag")
    stream_run(tmp_path, "20260101-000000-bbbb", "5", ["nope"] * 2, ["x y"] * 2, method="rag")
    everything = {t.name: t for t in build_tables(tmp_path, resamples=20)["tiny"]}
    chosen = {t.name: t for t in build_tables(tmp_path, resamples=20, streams=["3", "4", "7"])["tiny"]}
    assert everything["summary"].rows[0][2] == 4 and chosen["summary"].rows[0][2] == 2
    assert chosen["summary"].rows[0][3].interval.estimate == 1.0
