"""Tables from synthetic run directories, the bootstrap, launchers and tracking."""

import json

import numpy as np
import pytest
import yaml

from eval.metrics import aggregate, score_prediction
from eval.runs import find_runs, latest_runs
from eval.stats import bootstrap_mean, paired_difference
from eval.tables import build_tables, paper_table, to_csv, to_latex, to_markdown, write_tables
from tests.test_cli import cli


def make_run(root, data, method, llm, name, predictions, answers, state="complete", categories=None):
    run_dir = root / data / method / llm / name
    run_dir.mkdir(parents=True)
    rows = []
    for i, (prediction, answer) in enumerate(zip(predictions, answers)):
        category = categories[i] if categories else 4
        rows.append({"sample_id": "0", "question_id": f"q{i}", "category": category, "prediction": prediction,
                     "answer": answer, "scores": score_prediction(prediction, answer, category, ["0:1"], ["0:1"],
                                                                  true_answer="Not mentioned in the conversation"),
                     "retrieval_debug": {"total_memories": 10, "search_space_size": 4}})
    (run_dir / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "metrics.json").write_text(json.dumps(aggregate((r["category"], r["scores"]) for r in rows)))
    (run_dir / "ledger.json").write_text(json.dumps({"by_tag": {
        "note": {"calls": 10, "prompt_tokens": 100, "completion_tokens": 10, "parse_failures": 1},
        "answer": {"calls": len(rows), "prompt_tokens": 40, "completion_tokens": 4, "parse_failures": 0}},
        "total": {"calls": 10 + len(rows), "prompt_tokens": 140, "completion_tokens": 14}}))
    (run_dir / "memory_stats.json").write_text(json.dumps([{"sample_id": "0", "turns": 10,
                                                           "cluster_sizes": {"c0": 6, "c1": 4}}]))
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"method": {"name": method}}))
    (run_dir / "status.json").write_text(json.dumps({"state": state}))
    return run_dir


@pytest.fixture
def runs_root(tmp_path):
    root = tmp_path / "runs"
    make_run(root, "bioasq", "clag", "tiny", "20260101-000000-aaaa", ["x y"] * 4, ["x y"] * 4)
    make_run(root, "bioasq", "clag_cosine", "tiny", "20260101-000000-bbbb", ["x"] * 4, ["x y"] * 4)
    return root


EXPECTED_ABLATION = """### Clustering ablation on BioASQ (tiny; robust)

| Method | Data | Metric | Reproduced | Published | Δ | vs CLAG (95% CI) |
|---|---|---|---|---|---|---|
| Cosine-based clustering | bioasq | F1 | 66.67 | 14.78 | 51.89 | -33.33 [-33.33, -33.33] |
| Cosine-based clustering | bioasq | BLEU-1 | 36.79 | 12.53 | 24.26 | -63.21 [-63.21, -63.21] |
| K-Means clustering | bioasq | F1 | — | 15.64 | — | — |
| K-Means clustering | bioasq | BLEU-1 | — | 13.36 | — | — |
| CLAG (agentic) | bioasq | F1 | 100.00 | 22.01 | 77.99 | — |
| CLAG (agentic) | bioasq | BLEU-1 | 100.00 | 17.23 | 82.77 | — |

- Reproduced with llm=tiny; published values use Qwen3-0.6B.
- profile: robust; prompt set(s) of these runs: unrecorded
- 2 cell(s) have no complete run (—).
- vs CLAG: paired bootstrap mean difference over shared questions, 95% CI.
- run used: clag/bioasq: 20260101-000000-aaaa (4 questions)
- run used: clag_cosine/bioasq: 20260101-000000-bbbb (4 questions)
"""


def test_ablation_table_markdown_is_exact(runs_root):
    runs = latest_runs(find_runs(runs_root))
    assert to_markdown(paper_table("clustering_ablation", runs, "tiny", resamples=200)) == EXPECTED_ABLATION


def test_latest_complete_run_wins_and_unfinished_runs_are_ignored(runs_root):
    make_run(runs_root, "bioasq", "clag", "tiny", "20260102-000000-cccc", ["nope"] * 4, ["x y"] * 4)
    make_run(runs_root, "bioasq", "clag", "tiny", "20260103-000000-dddd", ["x y"] * 4, ["x y"] * 4, state="running")
    chosen = latest_runs(find_runs(runs_root))[("clag", "bioasq", "tiny")]
    assert chosen.path.name == "20260102-000000-cccc" and chosen.mean("f1") == 0.0


def test_missing_cells_are_marked_and_counted(runs_root):
    table = paper_table("final_answer", latest_runs(find_runs(runs_root)), "tiny", resamples=50)
    reproduced = {(r[0], r[1], r[2]): r[3] for r in table.rows}
    assert reproduced[("CLAG", "bioasq", "F1")] == 100.0 and reproduced[("GAM", "locomo", "F1")] is None
    assert "28 cell(s) have no complete run (—)." in table.notes


def test_all_formats_and_extras_are_written(runs_root, tmp_path):
    make_run(runs_root, "locomo", "clag", "tiny", "20260101-000000-eeee", ["a", "Not mentioned in the conversation"], ["a", "b"],
             categories=[1, 5])
    tables = build_tables(runs_root, resamples=50)
    written = write_tables(tables, tmp_path / "tables")
    names = {p.name for p in written}
    assert {"final_answer.md", "final_answer.tex", "final_answer.csv", "locomo_categories.md", "retrieval.md",
            "cost.md", "README.md"} <= names
    by_name = {t.name: t for t in tables["tiny"]}
    locomo = by_name["locomo_categories"].rows[0]
    assert locomo[0] == "clag" and locomo[1] == 100.0 and locomo[5] == 0.0
    assert locomo[6] == 100.0 and locomo[7] == 50.0 and locomo[8] == 100.0      # corrected category 5
    cost_row = next(r for r in by_name["cost"].rows if r[0] == "clag" and r[1] == "bioasq")
    # 10 memories: 10 note calls (100 + 10 tokens); 4 questions: 4 answers (40 + 4 tokens)
    assert cost_row[2:] == [10, 1.0, 10.0, 1.0, 0.0, 1.0, 10.0, 1.0, 1, 0, 0]
    tex = to_latex(by_name["clustering_ablation"])
    assert "\\begin{tabular}" in tex and "CLAG (agentic) & bioasq & F1 & 100.00" in tex
    assert to_csv(by_name["clustering_ablation"]).splitlines()[1].startswith("Cosine-based clustering,bioasq,F1,66.6667")


def test_bootstrap_on_known_cases():
    constant = paired_difference({"a": 1.0, "b": 0.5}, {"a": 0.5, "b": 0.0, "c": 9.0})
    assert (constant.estimate, constant.low, constant.high, constant.n) == (0.5, 0.5, 0.5, 2)
    values = np.array([1.0, -1.0] * 500)
    ci = bootstrap_mean(values, resamples=4000, seed=1)
    assert ci.estimate == 0.0 and -0.09 < ci.low < -0.03 and 0.03 < ci.high < 0.09   # ±1.96·1/√1000 ≈ ±0.062
    assert bootstrap_mean(values, resamples=500, seed=3) == bootstrap_mean(values, resamples=500, seed=3)
    assert paired_difference({"a": 1.0}, {"b": 1.0}) is None


def test_tables_command_writes_tables_and_plots(runs_root, tmp_path):
    out = tmp_path / "out"
    proc = cli("tables", "--runs", str(runs_root), "--out", str(out), "--bootstrap", "50")
    assert "### Clustering ablation on BioASQ (tiny; robust)" in proc.stdout
    assert (out / "tiny" / "f1_by_method.png").is_file() and (out / "tiny" / "clag_clusters.pdf").is_file()
    assert (out / "tiny" / "health.png").is_file()
    missing = cli("tables", "--runs", str(tmp_path / "nothing"), check=False)
    assert missing.returncode == 2 and missing.stderr.startswith("error: no run directories under")


@pytest.mark.parametrize(("launcher", "target"), [("local", "JoblibLauncher"), ("joblib", "JoblibLauncher"),
                                                  ("slurm", "SlurmLauncher")])
def test_launcher_configs_compose(launcher, target):
    proc = cli("run", "--cfg", "hydra", f"hydra/launcher={launcher}", "method=clag", "+experiment=paper_ablation")
    assert target in proc.stdout


def test_presets_compose_with_the_smoke_subset():
    proc = cli("run", "--cfg", "all", "+experiment=[paper_ablation,smoke]")
    config = yaml.safe_load(proc.stdout)
    assert config["hydra"]["sweeper"]["params"] == {"method": "clag,clag_kmeans,clag_cosine", "data": "bioasq"}
    assert config["llm"]["name"] == "qwen2.5-coder-0.5b" and config["data"]["subset"]["turns"] == 16
    assert config["small_subset"]["cluster_start"] == 8


def test_wandb_disabled_is_a_no_op_and_offline_writes_local_files(tmp_path):
    from eval.tracking import log_run

    metrics = {"questions": 1, "overall": {"f1": {"mean": 0.5, "count": 1}}}
    ledger = {"by_tag": {"answer": {"calls": 1}}}
    resolved = {"data": {"name": "bioasq"}, "method": {"name": "rag"}}
    assert log_run({"name": "wandb", "mode": "disabled"}, resolved, tmp_path, metrics, ledger) is None
    assert log_run({"name": "none"}, resolved, tmp_path, metrics, ledger) is None
    assert log_run({"name": "wandb", "mode": "offline", "project": "t"}, resolved, tmp_path, metrics, ledger)
    assert list((tmp_path / "wandb").glob("offline-run-*"))


def test_runs_of_another_profile_fill_their_own_column_and_the_note_names_it(runs_root):
    """clag@reference runs never stand in for robust ones, and the other way round."""
    make_run(runs_root, "bioasq", "clag@reference", "tiny", "20260101-000000-cccc", ["x"] * 4, ["x y"] * 4)
    runs = latest_runs(find_runs(runs_root))
    robust = paper_table("clustering_ablation", runs, "tiny", resamples=200)
    reference = paper_table("clustering_ablation", runs, "tiny", resamples=200, profile="reference")
    assert [r[3] for r in robust.rows if r[0] == "CLAG (agentic)"][0] == 100.0
    assert round([r[3] for r in reference.rows if r[0] == "CLAG (agentic)"][0], 2) == 66.67
    assert [r[3] for r in reference.rows if r[0] == "Cosine-based clustering"][0] is None
    assert any(n.startswith("profile: reference;") for n in reference.notes)


def test_a_subset_run_is_marked_in_the_cell_beside_a_published_number(runs_root):
    import yaml

    run_dir = next(runs_root.glob("bioasq/clag_cosine/tiny/*"))
    (run_dir / "config.yaml").write_text(yaml.safe_dump(
        {"method": {"name": "clag_cosine"}, "data": {"subset": {"samples": 1, "turns": None}}}))
    table = paper_table("clustering_ablation", latest_runs(find_runs(runs_root)), "tiny", resamples=200)
    markdown = to_markdown(table)
    assert "| Cosine-based clustering | bioasq | F1 | 66.67† | 14.78 | 51.89† |" in markdown
    assert "| CLAG (agentic) | bioasq | F1 | 100.00 | 22.01 | 77.99 | — |" in markdown   # a full run: no mark
    assert any(n.startswith("† run on a subset") and "clag_cosine/bioasq: 4 questions" in n for n in table.notes)


def test_clag_plus_is_clag_with_only_the_named_repairs():
    from eval.cli import compose

    plain = compose(["method=clag"])["method"]["memory"]
    plus = compose(["method=clag_plus"])["method"]["memory"]
    changed = {k for k in plain if plain[k] != plus[k]}
    assert changed == {"constrain_cluster_ids", "route_example_id", "stage2_rerank", "stale_centroids"}
    assert (plus["constrain_cluster_ids"], plus["route_example_id"], plus["stage2_rerank"],
            plus["stale_centroids"]) == (True, "candidate", True, False)


def test_load_gives_one_row_per_question_and_the_summary_pairs_methods_with_clag(runs_root):
    from eval.results import load
    from eval.tables import method_summary

    make_run(runs_root, "locomo", "clag", "tiny", "20260101-000000-ffff", ["a"] * 2, ["a"] * 2)
    make_run(runs_root, "locomo", "clag_cosine", "tiny", "20260101-000000-gggg", ["a", "b"], ["a", "a"])
    frame = load(runs_root)
    assert len(frame) == 12 and {"method", "data", "llm", "profile", "f1", "recall@10"} <= set(frame.columns)
    assert frame.groupby(["data", "method"])["f1"].mean().to_dict() == {
        ("bioasq", "clag"): 1.0, ("bioasq", "clag_cosine"): pytest.approx(2 / 3),
        ("locomo", "clag"): 1.0, ("locomo", "clag_cosine"): 0.5}
    rows = {(r[0], r[1]): r for r in method_summary(frame, "tiny", resamples=100).rows}
    assert rows[("clag_cosine", "locomo")][2] == 2 and rows[("clag", "locomo")][6] is None
    versus = rows[("clag_cosine", "all")][6]            # pooled over both datasets: 6 paired questions
    assert versus.n == 6 and versus.estimate == pytest.approx((4 * (2 / 3 - 1) + (0 - 1)) / 6)


def test_a_method_variant_is_its_own_row_not_the_latest_run(runs_root):
    variant = make_run(runs_root, "bioasq", "clag", "tiny", "20260109-000000-hhhh", ["nope"] * 4, ["x y"] * 4)
    (variant / "env.json").write_text(json.dumps({"overrides": ["data=bioasq", "method.memory.retrieve_k=5"]}))
    runs = latest_runs(find_runs(runs_root))
    assert runs[("clag", "bioasq", "tiny")].mean("f1") == 100.0          # the default is not replaced
    assert runs[("clag [retrieve_k=5]", "bioasq", "tiny")].mean("f1") == 0.0
    ablation = paper_table("clustering_ablation", runs, "tiny", resamples=50)
    assert next(r for r in ablation.rows if r[0] == "CLAG (agentic)")[3] == 100.0


def test_a_method_with_its_own_prompts_is_not_a_different_prompt_set(runs_root):
    for method, prompt_set in (("clag", "own:abc"), ("clag_cosine", None)):
        run_dir = next((runs_root / "bioasq" / method / "tiny").iterdir())
        ledger = json.loads((run_dir / "ledger.json").read_text())
        (run_dir / "ledger.json").write_text(json.dumps({**ledger, "prompt_set": prompt_set}))
    notes = paper_table("clustering_ablation", latest_runs(find_runs(runs_root)), "tiny", resamples=20).notes
    assert "profile: robust; prompt set(s) of these runs: own:abc; with their own prompts: clag_cosine" in notes


def test_every_table_cell_is_what_a_notebook_computes_from_load(runs_root):
    """The tables read the same per-question rows as ``eval.results.load``: a cell is a mean of them."""
    from eval.results import load

    make_run(runs_root, "locomo", "clag", "tiny", "20260101-000000-ffff", ["a", "b", "a"], ["a", "a", "a"],
             categories=[1, 1, 5])
    frame = load(runs_root)
    by_name = {t.name: t for t in build_tables(runs_root, resamples=50)["tiny"]}
    cosine = next(r for r in by_name["clustering_ablation"].rows
                  if r[0] == "Cosine-based clustering" and r[2] == "BLEU-1")
    rows = frame[(frame["method"] == "clag_cosine") & (frame["data"] == "bioasq")]
    assert cosine[3] == pytest.approx(100 * rows["bleu1"].mean())
    locomo = frame[(frame["data"] == "locomo")]
    category_1 = next(r for r in by_name["locomo_categories"].rows if r[0] == "clag")[1]
    assert category_1 == pytest.approx(100 * locomo.loc[locomo["category"] == 1, "f1"].mean())
    retrieval = next(r for r in by_name["retrieval"].rows if r[:2] == ["clag", "locomo"])
    assert retrieval[2:4] == ["turns, ranked", 3]
    assert retrieval[4:10] == [pytest.approx(100 * locomo[m].mean())
                               for m in ("e_precision", "e_recall", "e_f1", "recall@5", "recall@10", "ndcg@10")]


def test_a_run_whose_health_is_flagged_is_marked_in_its_cells_and_named_in_the_notes(runs_root):
    """A table never shows a degenerate run's score like any other: the cell carries ⚠ and a
    note names the run and the reason; load() has the health columns to filter on."""
    from eval.results import load
    from eval.tables import HEALTH_MARK, method_summary

    run_dir = next((runs_root / "bioasq" / "clag_cosine" / "tiny").iterdir())
    (run_dir / "ledger.json").write_text(json.dumps({"by_tag": {"note": {"calls": 10, "truncated": 6}}}))
    runs = latest_runs(find_runs(runs_root))
    table = to_markdown(paper_table("clustering_ablation", runs, "tiny", resamples=200))
    assert f"| Cosine-based clustering | bioasq | F1 | 66.67{HEALTH_MARK} |" in table
    csv_table = to_csv(paper_table("clustering_ablation", runs, "tiny", resamples=200))
    assert f"Cosine-based clustering,bioasq,F1,66.6667{HEALTH_MARK}" in csv_table   # not a repr
    assert "| CLAG (agentic) | bioasq | F1 | 100.00 |" in table          # a healthy run: no mark
    assert "6 of 10 calls ran to the token cap" in table and run_dir.name in table
    frame = load(runs_root)
    assert set(frame.loc[frame["health_flagged"], "method"]) == {"clag_cosine"}
    summary = to_markdown(method_summary(frame, "tiny", resamples=200))
    assert HEALTH_MARK in summary and "not to be trusted" in summary
