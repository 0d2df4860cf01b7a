"""The names a run is filed and shown under: method labels, profile names, run directories.

Its own module so that the runner (which files runs) and the tables (which read them back) share
one definition without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

#: the profile whose runs are filed under the plain method name; others add ``@<profile>``
DEFAULT_PROFILE = "robust"


def method_label(method: str, profile: str | None) -> str:
    """``clag`` under the default profile, ``clag@reference`` under another: runs of different
    profiles never share a directory, a row or a table column."""
    return method if not profile or profile == DEFAULT_PROFILE else f"{method}@{profile}"


DEFAULT_DECODING = "neutral"
#: the request format of a profile that has no file to say (the paper's: raw prompts)
DEFAULT_REQUEST_FORMAT = "raw"


@cache
def profile_request_format(profile: str | None) -> str:
    """The request format ``profile``'s own file names (``configs/profile/<name>.yaml``), which
    its setup name leaves unsaid; read from the file, so the profile says it once."""
    import yaml

    from eval.resources import CONFIG_DIR

    path = CONFIG_DIR / "profile" / f"{profile or DEFAULT_PROFILE}.yaml"
    try:
        own = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("request_format")
    except OSError:
        own = None
    return str(own or DEFAULT_REQUEST_FORMAT)


def request_format_name(cfg: Mapping[str, Any]) -> str:
    """The run's request format: ``profile.request_format``, else its profile's own. Every reader
    of a config (the client, the run's directory, its summary) resolves it here."""
    profile = cfg.get("profile") or {}
    return str(profile.get("request_format") or profile_request_format(profile.get("name")))


def setup_name(profile: str | None, request_format: str | None = None, decoding: str | None = None) -> str:
    """The profile, with the request format when it is not the profile's own and the decoding
    preset when it is not neutral: ``reference``, ``reference+openai+llama-cpp-python``,
    ``robust+raw``. Runs that sent different requests or decoded them differently never share a
    directory, a row or a column."""
    parts = [profile or DEFAULT_PROFILE]
    if request_format and request_format != profile_request_format(profile):
        parts.append(request_format)
    if decoding and decoding != DEFAULT_DECODING:
        parts.append(decoding)
    return "+".join(parts)


def describe(cfg: Mapping[str, Any]) -> dict[str, str]:
    """The names a run directory is filed under."""
    method = cfg.get("method") or {}
    llm = cfg.get("llm") or {}
    profile_cfg = cfg.get("profile") or {}
    decoding = (cfg.get("decoding") or {}).get("name")
    profile = setup_name(profile_cfg.get("name"), request_format_name(cfg), decoding)
    return {"data": str(cfg["data"]["name"]),
            "method": method_label(str(method.get("name", "none")), profile),
            "llm": str(llm.get("name", "none"))}
