"""llm.server=auto: llama.cpp's server started, shared, health-checked and stopped by the harness
(real binary, SmolLM2), and Ctrl-C stopping a run cleanly."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clag.llm.llama_server import LlamaServerError, ServerSpec, find_binary, shared_server, stop_all
from tests.test_cli import REPO


def _binary() -> Path:
    try:
        return find_binary()
    except LlamaServerError:
        pytest.skip("no llama-server: bash scripts/install.sh llamaserver")


SMOL = ["llm=smollm2-135m", "llm.backend=llamacpp", "llm.server=auto", "llm.server_slots=2",
        "llm.max_context=2048"]


def test_a_missing_binary_is_one_line_with_the_fix(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LLAMA_SERVER", str(tmp_path / "nothing"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LlamaServerError, match="install.sh llamaserver"):
        find_binary()
    with pytest.raises(LlamaServerError, match="not an executable"):
        find_binary(str(tmp_path / "nothing"))


def test_a_server_that_cannot_load_reports_its_log(tmp_path: Path) -> None:
    from clag.llm.llama_server import set_log_dir

    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    set_log_dir(tmp_path)
    spec = ServerSpec(binary=str(_binary()), model=str(bogus), slots=1, context_per_slot=512, threads=1)
    with pytest.raises(LlamaServerError, match="exited with code") as info:
        shared_server(spec)
    assert str(tmp_path / "llama-server.log") in str(info.value)


@pytest.mark.slow
def test_server_lifecycle_shared_and_stopped(tmp_path: Path) -> None:
    """One server per spec, shared by every backend built from it; grammar-constrained greedy
    output parses; the log is where the run said; stop_all ends the process."""
    from clag.llm.llama_server import running_servers, set_log_dir
    from clag.llm.models import build_backend
    from clag.llm.types import Request
    from eval.cli import compose

    _binary()
    set_log_dir(tmp_path)
    cfg = compose([*SMOL, "llm.cache_path=null", "llm.server_slots=1"])["llm"]
    backend = build_backend(cfg)
    assert backend.model_id.startswith("llama-server:smollm2-135m:")
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 40}},
              "required": ["answer"], "additionalProperties": False}
    requests = [Request(prompt=f"Q: What is {i} plus {i}?\nA (JSON):", max_tokens=40, temperature=0.0,
                        json_schema=schema, tag="answer") for i in range(4)]
    outputs = backend.generate(requests)
    assert all(o.finish_reason != "error" for o in outputs), [o.extra for o in outputs]
    assert all(isinstance(json.loads(o.text)["answer"], str) for o in outputs)
    again = backend.generate(requests[:2])     # greedy, one slot: the same text again (with more
    # slots a greedy output may change with what else is in flight: llama.cpp is not batch-invariant)
    assert [o.text for o in again] == [o.text for o in outputs[:2]]
    servers = running_servers()
    assert len(servers) == 1 and servers[0].alive()
    assert (tmp_path / "llama-server.log").stat().st_size > 0
    process = servers[0].process
    stop_all()
    assert process is not None and process.poll() is not None and running_servers() == []
    restarted = backend.generate(requests[:1])           # a stopped server is started again
    assert restarted[0].finish_reason != "error" and running_servers()[0].process is not process
    stop_all()


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_the_run_resumes(tmp_path: Path, data_root: Path) -> None:
    """SIGINT mid-run: one line, exit 130, no abort, the server gone; the same command resumes,
    and the finished run's ledger names the server, whose log is in the run directory (one
    server run for both checks: each costs a RAG smoke through a real server)."""
    _binary()
    args = [sys.executable, "-m", "eval", "run", "method=rag", "data=locomo", "+experiment=smoke", *SMOL,
            f"results_root={tmp_path / 'runs'}", f"llm.cache_path={tmp_path / 'llm.sqlite'}",
            "snapshot_dir=null", "concurrency.questions=1"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", CLAG_BENCH_DATA=str(data_root))
    # the child gets SIGINT's default disposition even when this test runs in a background job,
    # which a non-interactive shell starts with SIGINT ignored (Python then never raises it)
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    predictions = None
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        found = list((tmp_path / "runs").rglob("predictions.jsonl"))
        if found and found[0].read_text().count("\n") >= 1:
            predictions = found[0]
            break
        time.sleep(0.5)
    assert predictions is not None, "the run wrote no prediction in time"
    log = predictions.parent / "llama-server.log"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted:" in stderr and "terminate called" not in stderr
    assert json.loads((predictions.parent / "status.json").read_text())["state"] == "interrupted"
    port = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
    assert port, "the server's log names no port"
    with pytest.raises(OSError):                       # the server is gone with the run
        socket.create_connection(("127.0.0.1", int(port.group(1))), timeout=2).close()
    done = predictions.read_text().count("\n")
    resumed = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the interrupted run" in resumed.stdout
    assert predictions.read_text().count("\n") >= done
    ledger = json.loads((predictions.parent / "ledger.json").read_text())
    assert ledger["model_id"].startswith("llama-server:smollm2-135m:")
    assert ledger["servers"][0]["log"] == str(log)
    assert "--parallel" in ledger["servers"][0]["command"]
    assert log.stat().st_size > 0 and ledger["total"].get("errors", 0) == 0


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie waiting for whoever reaps orphans."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found.extend(int(c) for c in children)
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_a_started_server_dies_with_its_starter_even_by_sigkill(tmp_path: Path) -> None:
    """The process that starts a server is SIGKILLed (no atexit, no handler runs): the server
    goes within seconds instead of staying behind as an orphan."""
    starter = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         f"sys.path.insert(0, {str(REPO)!r})\n"
         "from clag.llm.llama_server import start_tied_to_this_process\n"
         "guard, _ = start_tied_to_this_process(['sleep', '300'], None)\n"
         "print(guard.pid, flush=True)\n"
         "time.sleep(300)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        guard = int(starter.stdout.readline())
        deadline = time.time() + 10
        while not _children(guard) and time.time() < deadline:
            time.sleep(0.05)
        (server,) = _children(guard)
        assert not _gone(server)
        starter.kill()
        starter.wait()
        deadline = time.time() + 15
        while not (_gone(server) and _gone(guard)) and time.time() < deadline:
            time.sleep(0.1)
        assert _gone(server), "the server outlived the process that started it"
        assert _gone(guard)
    finally:
        starter.kill()


def test_a_guarded_command_stops_when_the_guard_is_terminated(tmp_path: Path) -> None:
    """ManagedServer.stop() terminates the guard; the guard stops its command and says so in
    its exit code."""
    from clag.llm.llama_server import start_tied_to_this_process

    guard, lifeline = start_tied_to_this_process(["sleep", "300"], None)
    try:
        deadline = time.time() + 10
        while not _children(guard.pid) and time.time() < deadline:
            time.sleep(0.05)
        (server,) = _children(guard.pid)
        guard.terminate()
        assert guard.wait(timeout=15) == 128 + signal.SIGTERM
        assert _gone(server)
    finally:
        guard.kill()
        os.close(lifeline)


@pytest.mark.slow
def test_a_one_slot_server_gives_a_request_the_same_reply_whatever_came_before(tmp_path: Path) -> None:
    """The documented bit-exact path: on one slot, a request's reply depends on the request alone.
    With the prompt cache on, a prompt that follows one sharing its prefix is prefilled only past
    that prefix, and its sampled reply differs from the same prompt prefilled whole (measured:
    6 of 6 keyword prompts, SmolLM2) — what made a resumed run differ from an uninterrupted one."""
    from clag.llm.llama_server import set_log_dir
    from clag.llm.models import build_backend
    from clag.llm.types import Request
    from eval.cli import compose

    _binary()
    set_log_dir(tmp_path)
    cfg = compose([*SMOL, "llm.cache_path=null", "llm.server_slots=1", "llm.threads=1"])["llm"]
    schema = {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}}},
              "required": ["keywords"]}
    context = " ".join(f"Turn {i}: speaker {i % 3} lost job {i % 5} and moved {i % 4} times." for i in range(40))

    def ask(task: str, seed: int) -> Request:
        return Request(prompt=f"{context}\n\nTask: {task}\nJSON:", json_schema=schema, temperature=0.7,
                       max_tokens=48, seed=seed, tag="keywords")

    targets = [ask(f"keywords about speaker {k}", 100 + k) for k in range(3)]
    sharing = [ask(f"summarise turn {k}", 7 + k) for k in range(3)]     # the same long prefix
    replies = []
    for predecessors in ([], sharing):                 # each on a fresh server
        backend = build_backend(cfg)
        got = []
        for k, target in enumerate(targets):
            if predecessors:
                backend.generate([predecessors[k]])
            got.append(backend.generate([target])[0].text)
        replies.append(got)
        stop_all()
    assert all(text for text in replies[0]), replies
    assert replies[0] == replies[1]


@pytest.mark.slow
def test_a_sigkilled_and_resumed_one_slot_server_run_writes_the_uninterrupted_runs_predictions(
        tmp_path: Path, data_root: Path) -> None:
    """The documented bit-exact server path, end to end: A-mem on a LoCoMo slice (8 turns, 2
    questions) through llama-server with one slot; one run uninterrupted, one SIGKILLed half way
    (its server dies with it) and resumed into the same directory, each with its own cache."""
    _binary()

    def args(root: Path) -> list[str]:
        return [sys.executable, "-m", "eval", "run", "method=amem", "data=locomo", "data.subset.samples=1",
                "data.subset.turns=8", "data.subset.questions_per_sample=2", *SMOL, "llm.server_slots=1",
                "llm.threads=1", f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}",
                f"llm.cache_path={root / 'c.sqlite'}", "progress=false"]

    env = dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1")
    started = time.monotonic()
    whole = subprocess.run(args(tmp_path / "whole"), cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=1200)
    assert whole.returncode == 0, whole.stderr[-2000:]
    duration = time.monotonic() - started
    killed = subprocess.Popen(args(tmp_path / "killed"), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(duration / 2)
    assert killed.poll() is None, "the run ended before it could be killed"
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    resumed = subprocess.run(args(tmp_path / "killed"), cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=1200)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming the interrupted run" in resumed.stdout
    [first] = (tmp_path / "whole" / "runs").glob("*/*/*/*/predictions.jsonl")
    [second] = (tmp_path / "killed" / "runs").glob("*/*/*/*/predictions.jsonl")
    assert second.read_bytes() == first.read_bytes()
    assert len(first.read_text().splitlines()) == 2
