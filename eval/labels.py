"""The names a run is filed and shown under: method labels, profile names, run directories.

Its own module so that the runner (which files runs) and the tables (which read them back) share
one definition without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the profile whose runs are filed under the plain method name; others add ``@<profile>``
DEFAULT_PROFILE = "robust"


def method_label(method: str, profile: str | None) -> str:
    """``clag`` under the default profile, ``clag@reference`` under another: runs of different
    profiles never share a directory, a row or a table column."""
    return method if not profile or profile == DEFAULT_PROFILE else f"{method}@{profile}"


def describe(cfg: Mapping[str, Any]) -> dict[str, str]:
    """The names a run directory is filed under."""
    method = cfg.get("method") or {}
    llm = cfg.get("llm") or {}
    profile = (cfg.get("profile") or {}).get("name")
    return {"data": str(cfg["data"]["name"]),
            "method": method_label(str(method.get("name", "none")), profile),
            "llm": str(llm.get("name", "none"))}
