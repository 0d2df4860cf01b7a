"""Micro-batching and concurrent streams/questions give the answers of the one-at-a-time path."""

import json
import os
import subprocess
import sys
import threading

import pytest

from clag.llm.batcher import MicroBatcher
from clag.llm.client import LLMClient
from clag.llm.types import Request
from tests.conftest import REPO
from tests.scripted_llm import ScriptedBackend


def echo(request):
    return f"{request.prompt}|{request.seed}"


def test_concurrent_callers_are_merged_into_batches_and_get_their_own_results():
    backend = ScriptedBackend(echo, delay_s=0.01)
    batcher = MicroBatcher(backend, max_batch=64, max_wait_s=0.05)
    results = {}
    barrier = threading.Barrier(8)

    def call(i):
        barrier.wait()
        results[i] = batcher.generate([Request(prompt=f"p{i}-{j}", temperature=0) for j in range(2)])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all([c.text for c in results[i]] == [f"p{i}-0|None", f"p{i}-1|None"] for i in range(8))
    assert len(backend.batches) < 8 and max(len(b) for b in backend.batches) > 2
    assert sum(batcher.batch_sizes) == 16


def test_max_batch_caps_a_merged_call_and_errors_reach_every_caller():
    backend = ScriptedBackend(echo)
    batcher = MicroBatcher(backend, max_batch=1, max_wait_s=0.05)
    assert [c.text for c in batcher.generate([Request(prompt="a", temperature=0)])] == ["a|None"]

    def broken(request):
        raise RuntimeError("backend down")

    failing = MicroBatcher(ScriptedBackend(broken))
    with pytest.raises(RuntimeError, match="backend down"):
        failing.generate([Request(prompt="x")])
    with pytest.raises(RuntimeError, match="backend down"):        # the worker survives
        failing.generate([Request(prompt="y")])


def test_scoped_seeds_are_the_same_whether_scopes_run_in_threads_or_in_turn():
    def run(concurrent):
        client = LLMClient(MicroBatcher(ScriptedBackend(echo)) if concurrent else ScriptedBackend(echo))
        out = {}

        def question(i):
            with client.scope(f"question:{i}"):
                out[i] = [client.generate([Request(prompt="same", temperature=0.7)])[0].text for _ in range(2)]

        if concurrent:
            threads = [threading.Thread(target=question, args=(i,)) for i in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for i in range(6):
                question(i)
        return out

    sequential, threaded = run(False), run(True)
    assert sequential == threaded
    assert len({text for texts in sequential.values() for text in texts}) == 12    # every draw differs


def cli_run(root, data_root, method, *overrides):
    args = [sys.executable, "-m", "eval", "run", f"method={method}", "data=locomo", "data.subset.samples=3",
            "data.subset.turns=20", "data.subset.questions_per_sample=4", "llm.backend=tests.fake_backend:build",
            f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}", f"llm.cache_path={root / 'c.sqlite'}",
            "progress=false", *overrides]
    proc = subprocess.run(args, cwd=REPO, env=dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p.parent for p in (root / "runs").glob("locomo/*/*/*/status.json")]
    return run_dir


@pytest.mark.slow
@pytest.mark.parametrize("method", ["clag", "gam"])
def test_batched_and_concurrent_runs_equal_the_one_at_a_time_run(method, data_root, tmp_path):
    one = cli_run(tmp_path / "one", data_root, method, "concurrency.streams=1", "concurrency.questions=1",
                  "batching.prefetch_ingest=false")
    many = cli_run(tmp_path / "many", data_root, method, "concurrency.streams=3", "concurrency.questions=4")
    assert (one / "predictions.jsonl").read_bytes() == (many / "predictions.jsonl").read_bytes()
    assert json.loads((one / "metrics.json").read_text()) == json.loads((many / "metrics.json").read_text())
    ledger_one = json.loads((one / "ledger.json").read_text())
    ledger_many = json.loads((many / "ledger.json").read_text())
    assert ledger_one["total"]["calls"] == ledger_many["total"]["calls"]
    assert "micro_batches" not in ledger_one
    merged = ledger_many["micro_batches"]
    assert merged["requests"] == ledger_many["total"]["calls"] and merged["backend_calls"] < merged["requests"]
