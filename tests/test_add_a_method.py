"""Adding a method is one class and one YAML file: no registry, no builder, no second list."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from eval.results import load
from tests.conftest import REPO

TOY_YAML = """\
name: toy
memory:
  _target_: tests.toy_method.WordOverlapMemory
  k: 3
"""


def test_a_class_and_a_yaml_make_a_method_and_its_variant_is_its_own_row(tmp_path, data_root):
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    (configs / "method" / "toy.yaml").write_text(TOY_YAML)
    env = dict(os.environ, CLAG_BENCH_DATA=str(data_root), CLAG_BENCH_CONFIGS=str(configs), HF_HUB_OFFLINE="1")
    base = [sys.executable, "-m", "eval", "run", "method=toy", "data=locomo", "data.subset.samples=1",
            "data.subset.turns=16", "data.subset.questions_per_sample=3", "llm.backend=tests.fake_backend:build",
            f"results_root={tmp_path / 'runs'}", f"snapshot_dir={tmp_path / 'snap'}",
            f"llm.cache_path={tmp_path / 'c.sqlite'}", "progress=false"]
    for extra in ([], ["method.memory.k=1"]):
        proc = subprocess.run(base + extra, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]

    frame = load(tmp_path / "runs")
    assert sorted(frame["method"].unique()) == ["toy", "toy [k=1]"]
    retrieved = {}
    for run_dir in (tmp_path / "runs" / "locomo" / "toy").glob("*/*"):
        rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
        overrides = json.loads((run_dir / "env.json").read_text())["overrides"]
        retrieved["k=1" if "method.memory.k=1" in overrides else "k=3"] = {len(r["retrieved_ids"]) for r in rows}
    assert retrieved == {"k=3": {3}, "k=1": {1}}
