"""The results layout: one directory per run, everything needed to trust and trace a number.

``results/runs/<data>/<method>/<llm>/<timestamp>-<confighash>/`` holds ``config.yaml``
(resolved), ``env.json`` (versions, git hash, seeds, data checksums), ``predictions.jsonl``
(one line per question), ``metrics.json``, ``ledger.json``, ``memory_stats.json`` and
``status.json`` (running / complete / failed). ``eval tables`` reads only these.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import IO, Any

TRACKED_PACKAGES = (
    "clag-bench", "torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu",
    "hydra-core", "omegaconf", "nltk", "numpy", "scikit-learn", "datasets", "pandas",
    "rank-bm25", "xgrammar", "llama-cpp-python", "vllm", "openai",
)
PROJECT_ROOT = Path(__file__).resolve().parent.parent




def run_directory(root: Path, data: str, method: str, llm: str, chash: str,
                  now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    base = root / data / method / llm
    base.mkdir(parents=True, exist_ok=True)
    suffix = 0
    while True:  # two runs in the same second never share a directory (mkdir is atomic)
        candidate = base / (f"{stamp}-{chash}" if suffix == 0 else f"{stamp}-{chash}-{suffix}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            suffix += 1


def _state(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "status.json").read_text()).get("state")
    except (OSError, json.JSONDecodeError):
        return None


def _try_lock(run_dir: Path) -> IO[str] | None:
    """An exclusive lock on the directory for this process's lifetime, or None if another holds it."""
    handle = (run_dir / ".lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


_LOCKS: list[IO[str]] = []


def latest_complete_run(root: Path, data: str, method: str, llm: str, chash: str) -> Path | None:
    """The newest directory of this config hash whose run completed, if any (``skip_complete``)."""
    done = [p for p in _same_config(root / data / method / llm, chash) if _state(p) == "complete"]
    return done[-1] if done else None


def _same_config(base: Path, chash: str) -> list[Path]:
    """Run directories of one config hash, oldest first (their names start with the start time)."""
    return sorted(list(base.glob(f"*-{chash}")) + list(base.glob(f"*-{chash}-*")), key=lambda p: p.name)


def claim_run_directory(root: Path, data: str, method: str, llm: str, chash: str) -> tuple[Path, bool]:
    """The directory this run writes to, and whether it resumes an interrupted one.

    The latest directory of the same config hash is resumed when it is unfinished and no other
    process holds it; otherwise a new directory is made. Either way it is locked until exit, so
    two runs at once never write into the same directory.
    """
    same = _same_config(root / data / method / llm, chash)
    if same and _state(same[-1]) != "complete":
        lock = _try_lock(same[-1])
        if lock is not None:
            _LOCKS.append(lock)
            return same[-1], True
    run_dir = run_directory(root, data, method, llm, chash)
    lock = _try_lock(run_dir)
    if lock is not None:
        _LOCKS.append(lock)
    return run_dir, False


def write_json(path: Path, payload: Any) -> None:
    """Write atomically: a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, ensure_ascii=False, default=str)
        handle.write("\n")
    os.replace(tmp, path)


def git_state(cwd: Path = PROJECT_ROOT) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                                 timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    state: dict[str, Any] = {"commit": commit, "dirty": bool(status) if status is not None else None}
    if status:
        # which uncommitted changes: two runs from dirty trees can then be told apart (or not)
        diff = git("diff", "HEAD")
        if diff is not None:
            state["diff_sha256"] = hashlib.sha256(diff.encode()).hexdigest()
    return state


#: CPU features whose kernels llama.cpp and torch choose between (different kernels round differently)
CPU_FLAGS = ("avx", "avx2", "avx512f", "avx512bw", "avx512vnni", "avx512_bf16", "fma", "f16c", "amx_tile",
             "asimd", "sve")


def cpu_description() -> dict[str, Any]:
    """The processor and the features its kernels use; Linux's /proc/cpuinfo, else the platform."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                model = value.strip()
            elif key.strip() in ("flags", "Features"):
                flags |= set(value.split())
    except OSError:
        pass
    return {"model": model, "flags": [f for f in CPU_FLAGS if f in flags]}


def llama_cpp_build() -> str | None:
    """llama.cpp's own description of the kernels it was built with (llama-cpp-python installed)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    try:
        import llama_cpp

        return llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()
    except Exception:  # noqa: BLE001 - a broken build is reported by the backend, not here
        return None


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def environment(seeds: dict[str, Any]) -> dict[str, Any]:
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu_description(),
        "llama_cpp_build": llama_cpp_build(),
        "packages": package_versions(),
        "git": git_state(),
        "seeds": seeds,
    }


def earlier_cpu(run_dir: Path) -> tuple[float, bool]:
    """CPU seconds an unfinished run's earlier processes spent, and whether that is all of it.

    A process stopped by Ctrl-C (or a failure) writes its cumulative ``cpu_s`` into ``status.json``;
    one that was killed outright leaves the state ``running`` and no figure, so its share is lost
    and the sum is marked partial."""
    try:
        status = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0, False
    if status.get("state") == "running" or "cpu_s" not in status:
        return float(status.get("cpu_s") or 0.0), False
    return float(status["cpu_s"]), bool(status.get("cpu_whole", True))


def record_resume(run_dir: Path) -> None:
    """A resumed run keeps its first start's ``env.json`` (the run's identity) and appends what
    this start ran with under ``resumes``: code changed between the starts is then on record,
    not hidden behind the first start's commit."""
    path = run_dir / "env.json"
    try:
        env = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        env = {}
    env.setdefault("resumes", []).append({
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "argv": sys.argv,
        "git": git_state(), "packages": package_versions()})
    write_json(path, env)


class PredictionLog:
    """Appends one JSON line per answered question and makes it durable at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()           # streams running in threads share one log

    def append(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> PredictionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: per-question columns of :func:`load` before the scores (one column per metric after them)
QUESTION_COLUMNS = ("run", "method", "variant", "data", "llm", "profile", "on_subset", "sample_id",
                    "question_id", "category", "question", "answer", "prediction")


def load(runs_root: str | os.PathLike[str] = "results/runs", latest: bool = True):
    """Every scored question of the complete runs under ``runs_root`` as a pandas DataFrame: one
    row per question, with its run's method (a variant as its own label), data, llm, profile and
    whether the run used a subset, then one column per metric (0–1, NaN where a metric does not
    apply). ``latest``: only the latest run per method × data × llm, as the tables use.

        >>> df = load("results/runs")
        >>> df.groupby(["data", "method"])["f1"].mean().unstack()
    """
    from eval.runs import find_runs, latest_runs

    runs = find_runs(Path(runs_root))
    return frame_of(latest_runs(runs).values() if latest else runs)


def frame_of(runs: Any):
    """:func:`load`'s DataFrame for run records already found (their files are read once)."""
    import pandas as pd

    from eval.health import health_columns

    rows = []
    # a pooled run (eval.runs.RunGroup) gives each row its own run's name and health
    for run in (member for group in runs for member in group.members):
        shared = {"run": run.path.name, "method": run.label, "variant": run.variant, "data": run.data,
                  "llm": run.llm, "profile": run.profile, "on_subset": run.on_subset,
                  **health_columns(run.health)}
        for record in run.predictions:
            row = {**shared, **{k: record.get(k) for k in QUESTION_COLUMNS if k not in shared}}
            row["retrieval_ranked"] = record.get("retrieval_ranked")     # None: not recorded
            row["retrieved_count"] = len(record.get("retrieved_ids") or [])
            row.update(record.get("scores") or {})
            rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(QUESTION_COLUMNS))
    return frame
