"""Where the configs and the published numbers are, in a checkout and in an installed wheel.

A checkout (or an editable install) reads ``configs/`` and ``results/paper/`` at the project's
root, where they are edited; a wheel carries copies of them inside the package, as
``eval/configs`` and ``eval/paper`` (``pyproject.toml``'s package-dir), so ``pip install .``
gives a CLI that composes the same configs from any directory.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _located(checkout: Path, installed: Path) -> Path:
    return checkout if checkout.is_dir() else installed


def config_dir() -> Path:
    """``$CLAG_BENCH_CONFIGS``, else the checkout's ``configs/``, else the wheel's copy."""
    configured = os.environ.get("CLAG_BENCH_CONFIGS")
    if configured:
        return Path(configured)
    return _located(_PACKAGE.parent / "configs", _PACKAGE / "configs")


#: the config folder every command composes from (fixed at import, like Hydra's search path)
CONFIG_DIR = config_dir()


def group_choices(group: str) -> list[str]:
    """The choices of a config group: its YAML files. The only list of names there is — a method,
    a model or a dataset exists by having a file (files with a leading underscore hold shared
    keys, such as llm/_common.yaml, and are not choices)."""
    folder = CONFIG_DIR / group
    found = folder.glob("*.yaml") if folder.is_dir() else []
    return sorted(p.stem for p in found if not p.stem.startswith("_"))


def paper_dir() -> Path:
    """The published numbers (``results/paper/*.csv``)."""
    return _located(_PACKAGE.parent / "results" / "paper", _PACKAGE / "paper")
