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


def test_the_docs_example_is_the_toy_method_and_behaves_as_it_does():
    """docs/methods.md shows the method the test above runs: its block, executed, retrieves what
    tests/toy_method.py retrieves, through the interface's defaults for what it leaves out."""
    import re

    from clag.types import MemorySystem, Question, Retrieval, Turn
    from tests.toy_method import WordOverlapMemory

    block = re.search(r"```python\n(@dataclass\(frozen=True\)\nclass WordOverlapOptions:.*?)```",
                      (REPO / "docs" / "methods.md").read_text(), re.S)
    assert block is not None
    from dataclasses import dataclass

    scope = {"MemorySystem": MemorySystem, "Retrieval": Retrieval, "dataclass": dataclass}
    exec(block.group(1), scope)
    documented, toy = scope["WordOverlapMemory"](k=2), WordOverlapMemory(k=2)
    turns = [Turn(f"t{i}", "A", text, "", "s") for i, text in
             enumerate(["the cat sat", "a dog ran", "the cat ran home", "birds sing"])]
    for memory in (documented, toy):
        for turn in turns:
            memory.ingest(turn)
        memory.finalize()
    question = Question("q", "where the cat ran", "home", 1)
    assert documented.retrieve(question) == toy.retrieve(question)
    assert documented.concurrent_reads is False and documented.prompt_templates("X") == {}
    assert set(documented.snapshot_state()) == {"options", "turns"}
    assert vars(documented.options) == vars(toy.options) == {"k": 2}


def test_a_memory_class_outside_the_interface_is_one_line(tmp_path, data_root):
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    (configs / "method" / "loose.yaml").write_text("name: loose\nmemory:\n  _target_: collections.OrderedDict\n")
    env = dict(os.environ, CLAG_BENCH_DATA=str(data_root), CLAG_BENCH_CONFIGS=str(configs), HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "eval", "run", "method=loose", "data=locomo",
                           "llm.backend=tests.fake_backend:build", f"results_root={tmp_path / 'runs'}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: method 'loose': collections.OrderedDict is not a clag.types.MemorySystem "
        "(subclass it: docs/methods.md)")
    assert not (tmp_path / "runs").exists()
