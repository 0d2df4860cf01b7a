"""The README's run command, for real: SmolLM2 + MiniLM on a LoCoMo smoke subset, then a rerun."""

import json

import pytest

from tests.test_cli import cli

pytestmark = pytest.mark.slow      # real models or CLI subprocesses: the full suite, not the fast tier


def _run(tmp_path, data_root):
    proc = cli("run", "method=rag", "data=locomo", "+experiment=smoke", "llm=smollm2-135m",
               "data.subset.turns=60", f"results_root={tmp_path / 'runs'}", f"snapshot_dir={tmp_path / 'snap'}",
               f"llm.cache_path={tmp_path / 'llm.sqlite'}", "progress=false", data_root=data_root)
    run_dir = proc.stdout.strip().splitlines()[-1].removeprefix("run directory: ")
    return proc.stdout, tmp_path / "runs" / run_dir.split("/runs/", 1)[-1] if "/runs/" in run_dir else run_dir


def test_rag_smoke_run_writes_everything_and_a_rerun_makes_no_llm_call(tmp_path, data_root):
    out, run_dir = _run(tmp_path, data_root)
    assert any(line.startswith("group") for line in out.splitlines()) and "overall          5" in out
    from pathlib import Path

    run_dir = Path(run_dir)
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(len(r["retrieved_ids"]) == 10 for r in rows)
    ledger = json.loads((run_dir / "ledger.json").read_text())
    assert ledger["by_tag"]["answer"]["calls"] == 5 and ledger["by_tag"]["answer"]["cache_hits"] == 0
    assert ledger["request_format"]["name"] == "openai" and ledger["model_id"].startswith("hf:smollm2-135m:gguf:")
    assert json.loads((run_dir / "status.json").read_text())["state"] == "complete"

    _, rerun_dir = _run(tmp_path, data_root)
    rerun_dir = Path(rerun_dir)
    assert rerun_dir != run_dir
    again = json.loads((rerun_dir / "ledger.json").read_text())
    assert again["total"]["calls"] == 5 and again["total"]["cache_hits"] == 5
    reruns = [json.loads(line) for line in (rerun_dir / "predictions.jsonl").read_text().splitlines()]
    assert [r["prediction"] for r in reruns] == [r["prediction"] for r in rows]
    assert (rerun_dir / "metrics.json").read_text() == (run_dir / "metrics.json").read_text()
