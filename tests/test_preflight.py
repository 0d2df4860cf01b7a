"""A server run checks its LLM before ingesting anything, and a run whose every call failed is
not complete (the first-full-sweep traps: a dead or misnamed server under ``max_error_rate: 1.0``)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from clag.llm.openai_backend import OpenAIBackend
from clag.llm.preflight import LLMUnreachable, check_server
from clag.llm.request_format import RequestFormat
from tests.loopback_server import LoopbackServer
from tests.test_cli import cli


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_closed_port_is_one_line_naming_it():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(LLMUnreachable, match=rf"^no LLM server answers at {url} \(APIConnectionError"):
        check_server(OpenAIBackend(url, "m", retries=1), RequestFormat())


def test_the_check_asks_in_the_runs_request_format_and_names_a_model_the_server_does_not_list():
    server = LoopbackServer(models=["served-name"], reply=lambda body: '{"answer": "ok"}')
    try:
        request_format = RequestFormat("openai", system_message="You are helpful.")
        warning = check_server(OpenAIBackend(server.url, "m", retries=1), request_format)
    finally:
        server.close()
    assert server.paths == ["/v1/chat/completions"]            # one request, chat as the run sends
    body = server.bodies[0]
    assert body["messages"][0] == {"role": "system", "content": "You are helpful."}
    assert body["response_format"]["type"] == "json_schema" and body["max_tokens"] == 16
    assert warning is not None and "lists ['served-name'], not llm.model='m'" in warning


def test_a_server_that_refuses_the_request_stops_the_run_and_says_what_it_lists():
    server = LoopbackServer(models=["served-name"], fail_first=10, fail_status=404)
    try:
        with pytest.raises(LLMUnreachable, match=r"refused a test request: .*NotFoundError.*"
                                                 r"lists \['served-name'\], not llm.model='m'"):
            check_server(OpenAIBackend(server.url, "m", retries=1), RequestFormat())
    finally:
        server.close()


def test_a_listed_model_that_answers_passes_without_a_word():
    server = LoopbackServer(models=["m"], reply=lambda body: '{"answer": "ok"}')
    try:
        assert check_server(OpenAIBackend(server.url, "m", retries=1), RequestFormat()) is None
        assert server.paths == ["/v1/completions"]
    finally:
        server.close()


@pytest.mark.parametrize("profile", ["robust", "reference"])
def test_a_run_pointed_at_a_closed_port_stops_within_seconds_before_any_run_directory(
        profile, data_root, tmp_path):
    port = _closed_port()
    started = time.perf_counter()
    proc = cli("run", "method=rag", "data=locomo", "+experiment=smoke", f"profile={profile}",
               "llm.backend=openai", "llm.model=m", f"llm.base_url=http://127.0.0.1:{port}/v1",
               f"results_root={tmp_path / 'runs'}", f"snapshot_dir={tmp_path / 's'}", "progress=false",
               data_root=data_root, check=False)
    elapsed = time.perf_counter() - started
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith(f"error: no LLM server answers at http://127.0.0.1:{port}/v1")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()
    assert elapsed < 60, elapsed        # the interpreter's start and the data's load included


def test_a_run_whose_every_call_failed_ends_failed_not_complete(data_root, tmp_path):
    """The reference profile turns each failed call into an empty reply and goes on to the end;
    the run then says it failed (the server answered the check, then nothing else)."""
    server = LoopbackServer(models=["m"], fail_from=1, fail_status=400, reply=lambda body: '{"answer": "ok"}')
    try:
        proc = cli("run", "method=rag", "data=locomo", "+experiment=smoke", "profile=reference",
                   "llm.backend=openai", "llm.model=m", f"llm.base_url={server.url}", "llm.retries=1",
                   f"results_root={tmp_path / 'runs'}", f"snapshot_dir={tmp_path / 's'}",
                   f"llm.cache_path={tmp_path / 'c.sqlite'}", "progress=false", data_root=data_root, check=False)
    finally:
        server.close()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("error: every one of the run's ")
    run_dir = next(Path(tmp_path / "runs").glob("*/*/*/*/"))
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and "LLM requests failed" in status["error"]
    ledger = json.loads((run_dir / "ledger.json").read_text())
    assert ledger["total"]["errors"] == ledger["total"]["calls"] > 0
    assert (run_dir / "health.json").is_file()       # the run's own account is still written


def test_doctor_reads_the_same_model_list_as_the_run():
    """``eval doctor``'s server line: ok when the server lists llm.model, warn when it lists
    others, ok without a list, FAIL when nothing answers (one model-list reader for all three)."""
    import socket

    from eval.doctor import server as doctor_server

    def line(url: str, model: str = "m") -> tuple[str, str]:
        check = doctor_server({"backend": "openai", "name": "x", "base_url": url, "model": model})[0]
        return check.status, check.detail

    listing = LoopbackServer(models=["m"])
    unlisted = LoopbackServer(models=None)
    try:
        assert line(listing.url) == ("ok", f"{listing.url} serves m")
        assert line(listing.url, "other") == ("warn", f"{listing.url} lists ['m'], not llm.model='other'")
        assert line(unlisted.url)[0] == "ok" and "lists no models" in line(unlisted.url)[1]
    finally:
        listing.close()
        unlisted.close()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    status, detail = line(f"http://127.0.0.1:{port}/v1")
    assert status == "FAIL" and "unreachable" in detail
