"""Where dataset files live, how missing public ones are fetched, and how every file is verified.

The data root is config ``data.root``, else ``$CLAG_BENCH_DATA``, else a per-user cache folder.
Every known file is checked against the sha256 in ``sources.json`` (shipped with the package):
a silently changed benchmark file would make every number in a table untrustworthy.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from clag.files import cache_home, sha256_file
from eval.errors import DataError

ENV_VAR = "CLAG_BENCH_DATA"
_SOURCES_FILE = Path(__file__).with_name("sources.json")


@dataclass(frozen=True)
class KnownFile:
    path: str
    sha256: str
    bytes: int
    url: str | None
    source: str
    license: str


@lru_cache(maxsize=1)
def known_files() -> dict[str, KnownFile]:
    raw = json.loads(_SOURCES_FILE.read_text(encoding="utf-8"))["files"]
    return {path: KnownFile(path=path, **entry) for path, entry in raw.items()}


def default_cache_root() -> Path:
    return cache_home("data")


def data_root(configured: str | os.PathLike[str] | None = None) -> Path:
    """The data root: ``configured`` if given, else ``$CLAG_BENCH_DATA``, else the user cache."""
    if configured:
        root = Path(configured).expanduser()
        origin = "data.root"
    elif os.environ.get(ENV_VAR):
        root = Path(os.environ[ENV_VAR]).expanduser()
        origin = f"${ENV_VAR}"
    else:
        return default_cache_root()
    if root.exists() and not root.is_dir():
        raise DataError(f"data root {root} (from {origin}) is a file, not a folder")
    if not root.exists():      # a mistyped root is an error, never a new folder to download into
        raise DataError(f"data root {root} (from {origin}) does not exist: create it, or point {origin} "
                        "at the folder holding locomo/, hotpotqa/ and bioasq/")
    return root


def sha256_of(path: Path) -> str:
    return sha256_file(path)


@lru_cache(maxsize=256)
def _cached_sha256(path: str, size: int, mtime_ns: int) -> str:
    return sha256_of(Path(path))


def file_sha256(path: Path) -> str:
    """sha256 of a file, memoised on (path, size, mtime) so repeated loads hash once."""
    stat = path.stat()
    return _cached_sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def verify(path: Path, relative: str) -> str:
    """Check a file against the manifest; returns its sha256. Unknown files pass unverified."""
    digest = file_sha256(path)
    known = known_files().get(relative)
    if known is not None and digest != known.sha256:
        raise DataError(
            f"{path} does not match its published checksum (sha256 {digest[:12]}…, expected "
            f"{known.sha256[:12]}…): delete it to re-download, or replace it with the file from "
            f"{known.source}"
        )
    return digest


def is_verified(relative: str) -> bool:
    return relative in known_files()


def download(url: str, dest: Path, expected_sha256: str | None, timeout: float = 60.0) -> None:
    """Fetch ``url`` into ``dest`` atomically (temp file + rename), checking the checksum first."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
        if expected_sha256 is not None and sha256_of(tmp) != expected_sha256:
            raise DataError(f"the file downloaded from {url} does not match its published checksum")
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(
            f"could not download {url} ({exc}); place the file at {dest} yourself, or set "
            f"data.root / ${ENV_VAR} to a folder that has it"
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)


def resolve(relative: str, root: Path, allow_download: bool = True) -> Path:
    """The verified local path of ``relative`` under ``root``, downloading public files if missing."""
    path = root / relative
    if not path.is_file():
        known = known_files().get(relative)
        if known is None or known.url is None:
            raise DataError(f"{path} not found; {_how_to_obtain(relative)}")
        if not allow_download:
            raise DataError(f"{path} not found and downloads are off; fetch it from {known.url}")
        download(known.url, path, known.sha256)
    verify(path, relative)
    return path


def _how_to_obtain(relative: str) -> str:
    if relative.startswith("bioasq/"):
        return (
            "BioASQ golden files are registration-gated: download the Task B golden batches from "
            "bioasq.org and place them under <data root>/bioasq/taskb_golden/ "
            "(e.g. Task10BGoldenEnriched/10B1_golden.json … 10B6_golden.json)"
        )
    return f"check data.root / ${ENV_VAR} (it should contain {relative})"
