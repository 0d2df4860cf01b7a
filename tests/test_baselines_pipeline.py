"""GAM and MemoryOS through the real CLI on all three datasets, with the scripted SLM (tests only)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


def run(method, data, root, data_root):
    args = [sys.executable, "-m", "eval", "run", f"method={method}", f"data={data}", "data.subset.samples=1",
            "data.subset.turns=60", "data.subset.questions_per_sample=2", "llm.backend=tests.fake_backend:build",
            f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}", f"llm.cache_path={root / 'c.sqlite'}",
            "progress=false"]
    proc = subprocess.run(args, cwd=REPO, env=dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p.parent for p in (root / "runs").glob(f"{data}/{method}/*/*/status.json")]
    return run_dir


@pytest.mark.parametrize("data", ["locomo", "hotpotqa", "bioasq"])
@pytest.mark.parametrize("method", ["gam", "memoryos"])
def test_baseline_runs_and_reports_evidence_and_ledger(method, data, data_root, tmp_path):
    run_dir = run(method, data, tmp_path, data_root)
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert rows and all(r["prediction"] == "ok" for r in rows)
    assert any(r["retrieved_ids"] for r in rows)                       # evidence metrics have ids to score
    assert all(set(r["retrieved_ids"]) <= {f"{t}" for t in r["retrieved_ids"]} for r in rows)
    tags = json.loads((run_dir / "ledger.json").read_text())["by_tag"]
    if method == "gam":
        assert {"gam_memorize", "gam_plan", "gam_integrate", "gam_check", "answer"} <= set(tags)
        assert rows[0]["retrieval_debug"]["rounds"] == 1
    else:
        assert {"memoryos_meta", "memoryos_summary", "memoryos_query_keywords", "answer"} <= set(tags)
        assert tags["memoryos_query_keywords"]["calls"] == len(rows)
    assert all(counts.get("parse_failures", 0) == 0 for counts in tags.values())
    stats = json.loads((run_dir / "memory_stats.json").read_text())[0]
    assert stats["pages"] > 0
