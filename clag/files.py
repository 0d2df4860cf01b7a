"""File checksums, shared by model files (``clag.llm``) and dataset files (``eval.data``)."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=32)
def _sha256_of_version(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(Path(path))


def sha256_memo(path: Path) -> str:
    """``sha256_file``, hashed once per process for each version (size, mtime) of a file: a 491 MB
    model is checked on load and named in cache keys without being read twice."""
    stat = Path(path).stat()
    return _sha256_of_version(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def cache_home(*parts: str) -> Path:
    """The project's cache folder (``$XDG_CACHE_HOME/clag-bench``, else ``~/.cache/clag-bench``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "clag-bench", *parts)
