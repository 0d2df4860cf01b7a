"""Sampled runs with the real model are reproducible whatever the batching: the same command
with fresh caches, the same run one question at a time, and a run SIGKILLed and resumed all
write byte-identical predictions (temperature 0.7, SmolLM2 on ``hf``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def command(root, questions: int) -> list[str]:
    return [sys.executable, "-m", "eval", "run", "method=rag", "data=locomo", "+experiment=smoke",
            "llm=smollm2-135m", "data.subset.turns=60", "data.subset.questions_per_sample=4", "answer.max_tokens=48", f"concurrency.questions={questions}",
            f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}", f"llm.cache_path={root / 'c.sqlite'}",
            "progress=false"]


def predictions(root) -> bytes:
    files = list((root / "runs").glob("*/*/*/*/predictions.jsonl"))
    assert len(files) == 1, files
    return files[0].read_bytes()


def run(root, data_root, questions: int) -> bytes:
    proc = subprocess.run(command(root, questions), cwd=REPO, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return predictions(root)


def test_sampled_predictions_do_not_depend_on_batching_caches_or_interruptions(data_root, tmp_path):
    batched = run(tmp_path / "a", data_root, questions=4)
    assert batched.count(b"\n") == 4
    assert run(tmp_path / "b", data_root, questions=4) == batched          # same command, fresh cache
    assert run(tmp_path / "c", data_root, questions=1) == batched          # one question at a time
    killed = tmp_path / "d"
    env = dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(command(killed, 2), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        rows = list((killed / "runs").glob("*/*/*/*/predictions.jsonl"))
        if rows and rows[0].read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert run(killed, data_root, questions=2) == batched                  # resumed
