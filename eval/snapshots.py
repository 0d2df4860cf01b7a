"""Memory snapshots: a finished stream's memory is saved once and restored on a resumed run.

A snapshot is the memory system's :meth:`~clag.types.MemorySystem.snapshot_state` (everything
but its shared resources: the embedding model and the LLM client), pickled to
``<snapshot_dir>/<config hash>/<stream>.pkl`` atomically. Restoring builds a fresh memory with the
run's resources and loads the state into it, so ingestion is skipped entirely (no LLM call, no
embedding).
"""

from __future__ import annotations

import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from clag.types import MemorySystem


def snapshot_path(root: Path, config_hash: str, sample_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in sample_id)
    return root / config_hash / f"{safe}.pkl"


def save(memory: MemorySystem, path: Path, meta: dict[str, Any]) -> None:
    state = memory.snapshot_state()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        pickle.dump({"class": type(memory).__qualname__, "code": code_version(), "state": state,
                     "meta": meta}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


@lru_cache(maxsize=1)
def code_version() -> str:
    """The code that wrote a snapshot: a snapshot from other code is rebuilt, never trusted."""
    from eval.results import git_state, package_versions

    state = git_state()
    return f"{package_versions(('clag-bench',)).get('clag-bench')}:{state['commit']}:{state['dirty']}"


def restore(fresh: MemorySystem, path: Path) -> dict[str, Any] | None:
    """Load a snapshot into ``fresh`` (same class, same code); returns its meta, or None when unusable."""
    try:
        with path.open("rb") as handle:
            payload = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ModuleNotFoundError):
        return None
    if payload.get("class") != type(fresh).__qualname__ or payload.get("code") != code_version():
        return None
    fresh.load_snapshot_state(payload["state"])
    return payload["meta"]
