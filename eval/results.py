"""The results layout: one directory per run, everything needed to trust and trace a number.

``results/runs/<data>/<method>/<llm>/<timestamp>-<confighash>/`` holds ``config.yaml``
(resolved), ``env.json`` (versions, git hash, seeds, data checksums), ``predictions.jsonl``
(one line per question), ``metrics.json``, ``ledger.json``, ``memory_stats.json`` and
``status.json`` (running / complete / failed). ``eval tables`` reads only these.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

TRACKED_PACKAGES = (
    "clag-bench", "torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu",
    "hydra-core", "omegaconf", "nltk", "numpy", "scikit-learn", "datasets", "pandas",
    "rank-bm25", "xgrammar", "llama-cpp-python", "vllm", "openai",
)
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def config_hash(config: dict[str, Any]) -> str:
    """A short, stable hash of a resolved config (key order does not matter)."""
    canonical = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


def run_directory(root: Path, data: str, method: str, llm: str, chash: str,
                  now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    base = root / data / method / llm
    candidate = base / f"{stamp}-{chash}"
    suffix = 1
    while candidate.exists():  # two runs in the same second never share a directory
        candidate = base / f"{stamp}-{chash}-{suffix}"
        suffix += 1
    candidate.mkdir(parents=True)
    return candidate


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
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


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
        "packages": package_versions(),
        "git": git_state(),
        "seeds": seeds,
    }


class PredictionLog:
    """Appends one JSON line per answered question and makes it durable at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = path.open("a", encoding="utf-8")

    def append(self, row: dict[str, Any]) -> None:
        self._handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> PredictionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
