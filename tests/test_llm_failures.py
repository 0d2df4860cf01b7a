"""Failures as data: a request that fails after its retries is an error completion — counted,
never cached, handled by the caller's fallback — and a run stops only past the error rate."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from clag.llm.cache import RequestCache
from clag.llm.client import ErrorRateExceeded, LLMClient
from clag.llm.openai_backend import OpenAIBackend
from clag.llm.types import Request
from tests.conftest import REPO
from tests.loopback_server import LoopbackServer, request_of

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_five_percent_failures_are_counted_not_cached_and_do_not_stop_the_run(tmp_path):
    server = LoopbackServer(fail_every=20, reply=lambda body: '{"answer": "ok"}')
    try:
        backend = OpenAIBackend(server.url, "m", retries=1, concurrency=4)
        client = LLMClient(backend, cache=RequestCache(tmp_path / "c.sqlite"))
        requests = [Request(prompt=f"q{i}", temperature=0, json_schema=SCHEMA, tag="answer") for i in range(100)]
        out = client.generate(requests)
        errors = [c for c in out if c.finish_reason == "error"]
        assert len(errors) == server.failed == 5
        assert all(c.parsed is None and c.text == "" and c.parse_error == "backend error" for c in errors)
        total = client.ledger.to_dict()["total"]
        assert total["errors"] == 5 and total["parse_failures"] == 0 and total["calls"] == 100
        before = len(server.bodies)
        again = client.generate(requests)            # only the failed ones go out again
        assert len(server.bodies) - before == 5
        assert sum(c.cached for c in again) == 95
    finally:
        server.close()


def test_a_failure_rate_past_the_limit_stops_with_one_line():
    server = LoopbackServer(fail_every=2, reply=lambda body: '{"answer": "ok"}')
    try:
        client = LLMClient(OpenAIBackend(server.url, "m", retries=1), max_error_rate=0.1)
        with pytest.raises(ErrorRateExceeded, match=r"of 40 LLM requests failed \(50% > llm.max_error_rate 10%\)"):
            client.generate([Request(prompt=f"q{i}", temperature=0) for i in range(40)])
    finally:
        server.close()


def test_a_run_against_a_flaky_server_completes_and_its_ledger_counts_the_errors(data_root, tmp_path):
    from tests.memory_fakes import MemoryScript

    script = MemoryScript()
    server = LoopbackServer(fail_every=20, reply=lambda body: script(request_of(body)))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "eval", "run", "method=amem", "data=locomo", "data.subset.samples=1",
             "data.subset.turns=30", "data.subset.questions_per_sample=4", "llm.backend=openai", "llm.model=m",
             f"llm.base_url={server.url}", "llm.retries=1", f"results_root={tmp_path / 'runs'}",
             f"snapshot_dir={tmp_path / 's'}", f"llm.cache_path={tmp_path / 'c.sqlite'}", "progress=false"],
            cwd=REPO, env=dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1"),
            capture_output=True, text=True, timeout=600)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    ledger = json.loads(next((tmp_path / "runs").glob("*/*/*/*/ledger.json")).read_text())
    assert server.failed >= 3 and ledger["total"]["errors"] == server.failed
    assert ledger["decoding"]["top_k"] == 0 and ledger["decoding"]["max_whitespace"] == 16
    rows = (next((tmp_path / "runs").glob("*/*/*/*/predictions.jsonl"))).read_text().splitlines()
    assert len(rows) == 4
