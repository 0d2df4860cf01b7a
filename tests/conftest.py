"""Shared fixtures. Real data comes from $CLAG_BENCH_DATA (CI points it at the shared copy)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent


def _data_root() -> Path | None:
    for candidate in (os.environ.get("CLAG_BENCH_DATA"), REPO.parent / "shared" / "data" / "raw"):
        if candidate and (Path(candidate) / "locomo" / "locomo10.json").is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = _data_root()
    if root is None:
        pytest.skip("no data root: set CLAG_BENCH_DATA to the folder holding locomo/, hotpotqa/, bioasq/")
    return root


@pytest.fixture(scope="session")
def reference_dir(data_root):
    """The paper's pinned reference files in the data root (skips where they are absent)."""
    from eval.prompt_source import REFERENCE_FOLDER

    folder = data_root / REFERENCE_FOLDER
    if not (folder / "CLAG_memory.py").is_file():
        pytest.skip("the reference's files are not in the data root")
    return folder


@pytest.fixture(scope="session")
def locomo(data_root):
    from eval.data.locomo import load_locomo

    return load_locomo(data_root, download=False)


@pytest.fixture(scope="session")
def hotpot200(data_root):
    from eval.data.hotpotqa import load_hotpot200

    return load_hotpot200(data_root, allow_download=False)


@pytest.fixture(scope="session")
def bioasq(data_root):
    from eval.data.bioasq import load_bioasq

    return load_bioasq(data_root)
