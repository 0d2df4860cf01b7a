"""The anchor comparison reads each run's own files: its figures are the health report's counts,
its F1 the mean of the run's per-question scores, its command the one ``env.json`` recorded."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from tests.test_health import make_run

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def anchor():
    spec = importlib.util.spec_from_file_location("anchor_compare", REPO / "scripts" / "anchor_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _anchor_run(root: Path, setup: str, seed: int, f1s: list[float], server: str | None = "auto") -> Path:
    run_dir = make_run(root / "bioasq" / f"clag@{setup}" / "qwen2.5-coder-0.5b"
                       / f"20261204-00000{seed}-{server}")
    (run_dir / "config.yaml").write_text(yaml.safe_dump({
        "seed": seed, "data": {"name": "bioasq", "subset": {"sample_ids": [3]}},
        "llm": {"name": "qwen2.5-coder-0.5b", "backend": "llamacpp", "server": server},
        "method": {"name": "clag", "memory": {"route_example_id": None}}}))
    (run_dir / "status.json").write_text(json.dumps({"state": "complete"}))
    (run_dir / "metrics.json").write_text("{}")
    (run_dir / "env.json").write_text(json.dumps({
        "argv": ["python -m eval run", "method=clag", "data.subset.sample_ids=[3]", f"seed={seed}"],
        "git": {"commit": "abc", "dirty": False}}))
    stats = json.loads((run_dir / "memory_stats.json").read_text())
    stats[0]["sample_id"] = "3"
    (run_dir / "memory_stats.json").write_text(json.dumps(stats))
    (run_dir / "predictions.jsonl").write_text("".join(
        json.dumps({"sample_id": "3", "question_id": f"q{i}", "retrieved_ids": ["D1"],
                    "retrieval_debug": {"search_mode": "global" if i == 0 else "cluster"},
                    "scores": {"f1": f1, "bleu1": f1 / 2, "recall@10": 0.5}}) + "\n"
        for i, f1 in enumerate(f1s)))
    return run_dir


def test_the_comparison_pools_seeds_and_counts_from_each_runs_health(tmp_path, anchor):
    _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 43, [0.0, 0.5])
    _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 42, [1.0, 0.5])
    _anchor_run(tmp_path, "reference", 42, [0.25, 0.25])
    setups = anchor.compare(tmp_path)
    assert set(setups) == {"reference+openai+llama-cpp-python", "reference"}
    openai = setups["reference+openai+llama-cpp-python"]
    assert [r["seed"] for r in openai["runs"]] == [42, 43]
    assert openai["f1"]["mean"] == 50.0 and openai["f1"]["per_seed"] == [75.0, 25.0]
    run = openai["runs"][0]
    # the scripted calls of tests/test_health.py: two of five note analyses capped, one unparsable
    # prose reply, one copied keyword example; one routing answer equal to the example id
    assert (run["per_tag"]["note"]["capped"], run["per_tag"]["note"]["calls"]) == (2, 5)
    assert run["per_tag"]["keywords"]["placeholder_copies"] == 1
    assert (run["route_example_answers"], run["routing_decisions"]) == (1, 2)
    assert run["global_fallbacks"] == 1 and run["evolutions"] == 2
    reference = json.loads((REPO / "results" / "anchor" / "reference_run.json").read_text())
    table = anchor.to_markdown(setups, reference)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines()}
    # columns: the reference code, then the setups by name (reference, reference+openai+…)
    assert rows["F1 (pooled, 95% CI)"].startswith("| F1 (pooled, 95% CI) | ≈ 14.6 | 25.00 [25.00, 25.00]")
    assert "| 50.00 [" in rows["F1 (pooled, 95% CI)"] and "seeds [75.0, 25.0]" in rows["F1 (pooled, 95% CI)"]
    assert rows["note: capped / unparsable"].endswith("| 2 / 3 of 5 | 2 / 3 of 5; 2 / 3 of 5 (per seed) |")
    assert rows["evolve: prompt / output tokens (mean)"].endswith("| — | — |")     # no evolution call
    assert "`python -m eval run method=clag 'data.subset.sample_ids=[3]' seed=42`" in table


def test_in_process_runs_are_their_own_column(tmp_path, anchor):
    """llama-server and in-process llama-cpp-python decode one preset differently (the prompt in
    the repetition window or not), so their seeds must not be pooled."""
    _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 42, [1.0, 0.5])
    _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 42, [0.0, 0.0], server=None)
    setups = anchor.compare(tmp_path)
    assert set(setups) == {"reference+openai+llama-cpp-python", "reference+openai+llama-cpp-python (in process)"}
    assert setups["reference+openai+llama-cpp-python (in process)"]["f1"]["mean"] == 0.0
    assert setups["reference+openai+llama-cpp-python"]["f1"]["mean"] == 75.0


def test_server_auto_with_a_generated_only_window_is_filed_as_in_process(tmp_path, anchor):
    """server=auto runs the llama-cpp-python preset in process: its config still says auto."""
    run = _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 43, [0.5, 0.5])
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["llm"].update(repetition_penalty=1.1, repeat_last_n=64, repeat_window_includes_prompt=False)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    assert set(anchor.compare(tmp_path)) == {"reference+openai+llama-cpp-python (in process)"}
    # what ran decides, not the config read again: its ledger names llama.cpp's server
    (run / "ledger.json").write_text(json.dumps({"model_id": "llama-server:qwen2.5-coder-0.5b:x"}))
    assert set(anchor.compare(tmp_path)) == {"reference+openai+llama-cpp-python"}


def test_the_server_run_with_the_prompt_in_the_penalty_window_is_named_so(tmp_path, anchor):
    """llm.repeat_window_includes_prompt=true keeps the llama-cpp-python preset on llama.cpp's server:
    the isolating run has a column of its own, beside the in-process seeds."""
    run = _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 42, [0.5, 0.5])
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["llm"].update(repetition_penalty=1.1, repeat_last_n=64, repeat_window_includes_prompt=True)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "ledger.json").write_text(json.dumps({"model_id": "llama-server:qwen2.5-coder-0.5b:x"}))
    _anchor_run(tmp_path, "reference+openai+llama-cpp-python", 43, [0.0, 0.0], server=None)
    assert set(anchor.compare(tmp_path)) == {
        "reference+openai+llama-cpp-python (llama-server, prompt in the penalty window)",
        "reference+openai+llama-cpp-python (in process)"}


def _figures(capped: int, low_similarity: int, f1: float) -> dict:
    tag = {"calls": 134, "capped": capped, "unparsable": capped, "placeholder_copies": 0,
           "prompt_tokens_mean": 1400, "output_tokens_mean": 300}
    return {"per_tag": {t: dict(tag) for t in ("note", "evolve", "keywords", "answer")},
            "should_evolve": {"true": 70, "parsed": 120}, "route_example_answers": 34, "routing_decisions": 34,
            "routing_reasons": {"routed": 34 - low_similarity, "low_similarity": low_similarity},
            "selections_naming_missing_clusters": 5, "global_fallbacks": 1, "questions": 20,
            "calls_per_memory": 2.3, "clusters": 3 + low_similarity, "singletons": low_similarity,
            "f1_by_question": [f1]}


def test_reference_checks_call_a_figure_within_by_the_seeds_range_or_a_fisher_test(anchor):
    reference = json.loads((REPO / "results" / "anchor" / "reference_run.json").read_text())
    runs = [_figures(9, 2, 0.10), _figures(11, 3, 0.20)]
    setup = {"runs": runs, "f1": {"mean": 15.0, "low": 5.0, "high": 25.0, "per_seed": [10.0, 20.0]},
             "recall@10": {"mean": 50.0, "low": 45.0, "high": 55.0, "per_seed": [48.0, 52.0]}}
    checks = {c["figure"]: c for c in anchor.reference_checks(setup, reference)}
    assert checks["F1"]["within"] is True                          # 14.6 in [10, 20]
    assert checks["R@10"]["within"] is False                       # 32 outside both range and CI
    capped = checks["evolutions at the cap"]                       # reference 13 of 134: above 9 and 11
    assert capped["within"] is True and capped["p"] >= anchor.ALPHA
    assert capped["seeds"] == ["9 of 134", "11 of 134"]
    # the reference's 0 of 134 capped note analyses against 20 of 268 pooled: a real difference
    note = checks["note analyses at the cap"]
    assert note["within"] is False and note["p"] < anchor.ALPHA
    floor = checks["routes refused by the cosine floor (a new cluster each)"]
    assert floor["reference"] == "4 of 34" and floor["within"] is True
    assert checks["singleton clusters"]["within"] is False         # 6 outside [2, 3], no test to widen it
    table = "\n".join(anchor.checks_markdown({"s": setup}, reference))
    assert f"{sum(c['within'] for c in checks.values())} of {len(checks)} figures" in table


def test_runs_an_earlier_comparison_recorded_stay_when_their_directories_are_gone(tmp_path, anchor):
    """Run directories are not committed; their figures and health are, and a new seed joins them."""
    runs, out = tmp_path / "runs", tmp_path / "anchor"
    _anchor_run(runs, "reference+openai+llama-cpp-python", 42, [1.0, 0.5])
    _anchor_run(runs, "reference", 42, [0.25, 0.25])
    first = anchor.compare(runs)
    out.mkdir()
    (out / "comparison.json").write_text(json.dumps(
        {name: {"runs": [{k: v for k, v in r.items() if k != "health"} for r in s["runs"]]}
         for name, s in first.items()}))
    for name, s in first.items():
        for r in s["runs"]:
            (out / "runs" / f"{name}-seed{r['seed']}").mkdir(parents=True)
            (out / "runs" / f"{name}-seed{r['seed']}" / "health.json").write_text(json.dumps(r["health"]))
    # the openai run's directory is gone; a second seed of the SGLang shape is new
    for run_dir in (runs / "bioasq" / "clag@reference+openai+llama-cpp-python").rglob("*"):
        if run_dir.is_file():
            run_dir.unlink()
    _anchor_run(runs, "reference", 43, [0.75, 0.75])
    setups = anchor.compare(runs, stored=anchor.stored_runs(out))
    assert set(setups) == {"reference+openai+llama-cpp-python", "reference"}
    assert setups["reference+openai+llama-cpp-python"]["f1"]["per_seed"] == [75.0]
    assert setups["reference+openai+llama-cpp-python"]["runs"][0]["health"] == first[
        "reference+openai+llama-cpp-python"]["runs"][0]["health"]
    # the seed-42 run is read from its directory once, not again from its stored figures
    assert [r["seed"] for r in setups["reference"]["runs"]] == [42, 43]
    assert setups["reference"]["f1"]["mean"] == 50.0
    assert set(anchor.compare(runs)) == {"reference"}


def test_only_the_reference_profiles_setups_are_compared(tmp_path, anchor):
    _anchor_run(tmp_path, "robust+openai", 42, [1.0, 0.5])
    _anchor_run(tmp_path, "reference+openai", 42, [1.0, 0.5])
    assert set(anchor.compare(tmp_path)) == {"reference+openai"}
