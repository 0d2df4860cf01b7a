"""Every LLM memory method through the real pipeline with the offline SmolLM2 (a tiny subset).

The methods share one LLM cache, as a user's sweep would: identical note-analysis calls are
made once. CLAG's clustering starts at 3 notes here so that routing, profiles and two-stage
retrieval all run against the real model.
"""

import json
from pathlib import Path

import pytest

from tests.test_cli import cli

pytestmark = pytest.mark.slow      # real models or CLI subprocesses: the full suite, not the fast tier

SUBSET = ["data=locomo", "data.subset.samples=1", "data.subset.turns=6", "data.subset.questions_per_sample=1",
          "answer.max_tokens=32", "method.memory.max_tokens=120", "progress=false"]


@pytest.mark.parametrize("method", ["amem", "clag", "clag_cosine", "clag_kmeans"])
def test_method_runs_offline_with_the_default_model(method, data_root, tmp_path_factory):
    shared = tmp_path_factory.getbasetemp() / "methods-cache"
    extra = ["method.memory.init_cluster_min_memories=3"] if method.startswith("clag") else []
    proc = cli("run", f"method={method}", *SUBSET, *extra, f"results_root={shared / 'runs'}", f"snapshot_dir={shared / 'snap'}",
               f"llm.cache_path={shared / 'llm.sqlite'}", data_root=data_root)
    run_dir = Path(proc.stdout.strip().splitlines()[-1].removeprefix("run directory: "))
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["retrieved_ids"]
    ledger = json.loads((run_dir / "ledger.json").read_text())["by_tag"]
    assert ledger["note"]["calls"] == 6 and ledger["evolve"]["calls"] == 6 and ledger["answer"]["calls"] == 1
    stats = json.loads((run_dir / "memory_stats.json").read_text())[0]
    assert stats["memories"] == 6
    if method == "clag":
        assert ledger["route"]["calls"] == 3 and ledger["profile"]["calls"] >= 3
        assert stats["clusters"] >= 3 and stats["routing"]["decisions"] == 3
        assert "candidate_clusters" in rows[0]["retrieval_debug"]
    if method in ("clag_cosine", "clag_kmeans"):
        assert "route" not in ledger and stats["clusters"] >= 1
