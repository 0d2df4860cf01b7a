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


#: the request shape a setup name leaves unsaid: each profile's own (``robust`` sends chat messages,
#: the instruct models' own template, since its raw-prompt runs copied the prompts' examples; every
#: other profile the paper's SGLang path)
PROFILE_SHAPES = {"robust": "openai"}
DEFAULT_SHAPE = "sglang"
DEFAULT_DECODING = "neutral"


def default_shape(profile: str | None) -> str:
    """The request shape ``profile`` uses when it does not name one."""
    return PROFILE_SHAPES.get(profile or DEFAULT_PROFILE, DEFAULT_SHAPE)


def setup_name(profile: str | None, request_shape: str | None = None, decoding: str | None = None) -> str:
    """The profile, with the request shape when it is not the profile's own and the decoding preset
    when it is not neutral: ``reference``, ``reference+openai+llama-cpp-python``, ``robust+sglang``.
    Runs that sent different requests or decoded them differently never share a directory, a row
    or a column."""
    parts = [profile or DEFAULT_PROFILE]
    if request_shape and request_shape != default_shape(profile):
        parts.append(request_shape)
    if decoding and decoding != DEFAULT_DECODING:
        parts.append(decoding)
    return "+".join(parts)


def describe(cfg: Mapping[str, Any]) -> dict[str, str]:
    """The names a run directory is filed under."""
    method = cfg.get("method") or {}
    llm = cfg.get("llm") or {}
    profile_cfg = cfg.get("profile") or {}
    decoding = (cfg.get("decoding") or {}).get("name")
    profile = setup_name(profile_cfg.get("name"), profile_cfg.get("request_shape"), decoding)
    return {"data": str(cfg["data"]["name"]),
            "method": method_label(str(method.get("name", "none")), profile),
            "llm": str(llm.get("name", "none"))}
