"""Run a command that dies with the process that started it, whatever signal ends that process.

    python lifeline.py COMMAND [ARGS…]      # stdin: the read end of a pipe the starter holds open

A server the harness starts must not outlive it: ``atexit`` and the Ctrl-C handler stop it on
an orderly exit, but a SIGKILL (an out-of-memory kill, a scheduler's, a user's ``kill -9``) runs
no handler, and the server stayed behind holding its memory. The starter keeps the write end of
a pipe open; the kernel closes it when the starter dies, however it dies; this guard reads EOF
and stops the command. ``prctl(PR_SET_PDEATHSIG)`` would be shorter but fires when the *thread*
that started the child exits, and the harness starts its server from whichever worker thread
asks first.

Run as a file in isolated mode (``python -I lifeline.py``), not as ``-m clag.llm.lifeline``: it
imports nothing of the project, so it starts in milliseconds, and ``-I`` keeps its own folder off
``sys.path`` (``clag/llm/types.py`` would shadow the standard library's ``types``). SIGTERM and
SIGINT to the guard stop the command too; its exit code is the command's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

STOP_WAIT_S = 10.0


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: lifeline.py COMMAND [ARGS…]", file=sys.stderr)
        return 2
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    stopped_by: list[int] = []

    def stop(exit_code: int) -> None:
        """Ask the command to stop, and kill it if it has not after a while; the main thread's
        ``wait()`` returns when it exits (waiting here, in a signal handler, would deadlock
        with that wait)."""
        if not stopped_by:
            stopped_by.append(exit_code)
            if child.poll() is None:
                child.terminate()
                timer = threading.Timer(STOP_WAIT_S, _kill, (child,))
                timer.daemon = True
                timer.start()

    def watch_the_starter() -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered reader's lock aborts
        # the interpreter at shutdown
        try:
            while os.read(0, 4096):               # nothing is ever written: this waits for EOF
                pass
        except OSError:
            pass
        stop(0)

    signal.signal(signal.SIGTERM, lambda signum, _frame: stop(128 + signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: stop(128 + signum))
    threading.Thread(target=watch_the_starter, daemon=True).start()
    code = child.wait()
    return stopped_by[0] if stopped_by else code


def _kill(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
