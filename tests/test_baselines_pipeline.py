"""GAM and MemoryOS through the real CLI on all three datasets, with the scripted SLM (tests only)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow      # real models or CLI subprocesses: the full suite, not the fast tier

METHODS = ("gam", "memoryos")
DATASETS = ("locomo", "hotpotqa", "bioasq")


@pytest.fixture(scope="module")
def runs(data_root, tmp_path_factory):
    """One Hydra multirun: both methods × the three datasets (one process, six runs)."""
    root = tmp_path_factory.mktemp("baselines")
    args = [sys.executable, "-m", "eval", "run", "-m", f"method={','.join(METHODS)}", f"data={','.join(DATASETS)}",
            "data.subset.samples=1", "data.subset.turns=60", "data.subset.questions_per_sample=2",
            "llm.backend=tests.fake_backend:build", f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}",
            f"llm.cache_path={root / 'c.sqlite'}", f"hydra.sweep.dir={root / 'sweep'}", "progress=false"]
    proc = subprocess.run(args, cwd=REPO, env=dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1"),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "runs"


@pytest.mark.parametrize("data", DATASETS)
@pytest.mark.parametrize("method", METHODS)
def test_baseline_runs_and_reports_evidence_and_ledger(method, data, runs):
    (run_dir,) = [p.parent for p in runs.glob(f"{data}/{method}/*/*/status.json")]
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert rows and all(r["prediction"] == "ok" for r in rows)
    assert any(r["retrieved_ids"] for r in rows)                       # evidence metrics have ids to score
    ledger = json.loads((run_dir / "ledger.json").read_text())
    tags = ledger["by_tag"]
    if method == "gam":
        assert {"gam_memorize", "gam_plan", "gam_integrate", "gam_check", "answer"} <= set(tags)
        assert rows[0]["retrieval_debug"]["rounds"] == 1
    else:
        assert {"memoryos_meta", "memoryos_summary", "memoryos_query_keywords", "answer"} <= set(tags)
        assert tags["memoryos_query_keywords"]["calls"] == len(rows)
    assert ledger["by_phase"]["question"]["calls"] >= 2 * len(rows)
    assert ledger["by_phase"]["ingest"]["calls"] == tags.get("gam_memorize", {"calls": 0})["calls"] + sum(
        c["calls"] for t, c in tags.items() if t.startswith("memoryos_") and t != "memoryos_query_keywords")
    assert all(counts.get("parse_failures", 0) == 0 for counts in tags.values())
    stats = json.loads((run_dir / "memory_stats.json").read_text())[0]
    assert stats["pages"] > 0
