"""Interrupted runs lose nothing: SIGKILL at random points, resume, compare byte for byte."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO


def command(root):
    return [sys.executable, "-m", "eval", "run", "method=amem", "data=locomo", "data.subset.samples=2",
            "data.subset.turns=16", "data.subset.questions_per_sample=3", "llm.backend=tests.fake_backend:build",
            f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}", f"llm.cache_path={root / 'c.sqlite'}",
            "progress=false"]


def environment(data_root):
    return dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1")


def run_to_end(root, data_root):
    proc = subprocess.run(command(root), cwd=REPO, env=environment(data_root), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def only_run_dir(root):
    dirs = [p.parent for p in (root / "runs").glob("*/*/*/*/status.json")]
    assert len(dirs) == 1, dirs
    return dirs[0]


@pytest.fixture(scope="module")
def reference(data_root, tmp_path_factory):
    root = tmp_path_factory.mktemp("uninterrupted")
    started = time.monotonic()
    run_to_end(root, data_root)
    return only_run_dir(root), time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(2))
def test_sigkill_then_resume_gives_byte_identical_results(trial, reference, data_root, tmp_path):
    ref_dir, duration = reference
    rng = random.Random(trial)
    kills, finished = 0, False
    for _ in range(2):                                   # up to two kills per trial
        proc = subprocess.Popen(command(tmp_path), cwd=REPO, env=environment(data_root),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 0.9 * duration))
        if proc.poll() is not None:
            finished = True
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        if any(json.loads(s.read_text()).get("state") == "complete"
               for s in (tmp_path / "runs").glob("*/*/*/*/status.json")):
            finished = True                              # killed after it had already finished
            break
    # a kill before the run had claimed its directory leaves nothing to resume (a slow start)
    claimed = bool(list((tmp_path / "runs").glob("*/*/*/*")))
    out = "" if finished else run_to_end(tmp_path, data_root)
    run_dir = only_run_dir(tmp_path)
    for name in ("predictions.jsonl", "metrics.json"):
        assert (run_dir / name).read_bytes() == (ref_dir / name).read_bytes(), (name, kills)
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    keys = [(r["sample_id"], r["question_id"]) for r in rows]
    expected = (ref_dir / "predictions.jsonl").read_text().count("\n")
    assert len(keys) == len(set(keys)) == expected > 0          # nothing lost, nothing duplicated
    assert json.loads((run_dir / "status.json").read_text())["state"] == "complete"
    if kills and claimed and not finished:
        assert "resuming the interrupted run" in out


@pytest.mark.slow
def test_two_runs_at_once_write_separate_directories(data_root, tmp_path):
    procs = [subprocess.Popen(command(tmp_path), cwd=REPO, env=environment(data_root), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    dirs = sorted(p.parent for p in (tmp_path / "runs").glob("*/*/*/*/status.json"))
    assert len(dirs) == 2
    assert (dirs[0] / "predictions.jsonl").read_bytes() == (dirs[1] / "predictions.jsonl").read_bytes()


@pytest.mark.slow
def test_an_interrupted_run_resumes_with_its_cpu_time_and_skip_complete_leaves_it_alone(data_root, tmp_path):
    """Ctrl-C writes the run's CPU seconds so far and the resumed run's ``cpu_s`` adds them; then a
    relaunched sweep goes on where it stopped: with ``skip_complete=true`` the completed config is
    not run again, without it (the default) it runs again in a new directory."""
    proc = subprocess.Popen(command(tmp_path), cwd=REPO, env=environment(data_root),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list((tmp_path / "runs").glob("*/*/*/*/timings.jsonl")):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    run_dir = only_run_dir(tmp_path)
    stopped = json.loads((run_dir / "status.json").read_text())
    assert stopped["state"] == "interrupted" and stopped["cpu_s"] > 0 and stopped["cpu_whole"] is True
    run_to_end(tmp_path, data_root)
    done = json.loads((only_run_dir(tmp_path) / "status.json").read_text())
    assert done["state"] == "complete" and done["cpu_whole"] is True
    assert done["cpu_s"] > stopped["cpu_s"]

    before = (run_dir / "status.json").read_bytes()
    proc = subprocess.run(command(tmp_path) + ["skip_complete=true"], cwd=REPO, env=environment(data_root),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"already complete, not run again (skip_complete=true): {run_dir}" in proc.stdout
    assert only_run_dir(tmp_path) == run_dir and (run_dir / "status.json").read_bytes() == before
    run_to_end(tmp_path, data_root)                      # the default: run again, a new directory
    assert len(list((tmp_path / "runs").glob("*/*/*/*/status.json"))) == 2
