"""Which prompt set a run uses, and where the reference's files come from.

``profile.prompts: own`` is this project's wording; ``reference`` reads the paper's templates from
dmis-lab/CLAG at the pinned commit: from ``profile.reference_dir`` when set, else from the data
root (``clag_reference/c938d72/``), downloaded there on first use like LoCoMo — always checked
against the sha256 in ``eval/data/sources.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clag.llm.request_format import REQUEST_FORMATS, RequestFormat
from clag.prompt_sets import (
    REFERENCE_EVAL_FILE,
    REFERENCE_MEMORY_FILE,
    OwnPrompts,
    PromptSet,
    ReferencePrompts,
    reference_system_message,
)
from eval.errors import ConfigError, DataError

REFERENCE_FOLDER = "clag_reference/c938d72"
PROMPT_SETS = ("own", "reference")


def reference_files(reference_dir: str | None, data_root_cfg: str | None,
                    allow_download: bool = True) -> tuple[Path, Path]:
    from eval.data.sources import data_root, resolve, verify

    paths = []
    for name in (REFERENCE_MEMORY_FILE, REFERENCE_EVAL_FILE):
        relative = f"{REFERENCE_FOLDER}/{name}"
        if reference_dir:
            path = Path(reference_dir).expanduser() / name
            if not path.is_file():
                raise DataError(f"profile.reference_dir: {path} not found (it should hold dmis-lab/CLAG's "
                                f"{REFERENCE_MEMORY_FILE} and {REFERENCE_EVAL_FILE} at commit c938d72)")
            verify(path, relative)
        else:
            path = resolve(relative, data_root(data_root_cfg), allow_download=allow_download)
        paths.append(path)
    return paths[0], paths[1]


def build_prompt_set(profile: Mapping[str, Any] | None, data: Mapping[str, Any] | None = None) -> PromptSet:
    """The prompt set a run's ``profile`` names (``own`` when the config has no profile)."""
    profile = profile or {}
    name = str(profile.get("prompts") or "own")
    if name == "own":
        return OwnPrompts()
    if name == "reference":
        memory_file, eval_file = reference_files(profile.get("reference_dir"), (data or {}).get("root"),
                                                 allow_download=bool((data or {}).get("download", True)))
        return ReferencePrompts(memory_file, eval_file)
    raise ConfigError(f"unknown profile.prompts {name!r}; valid: {', '.join(PROMPT_SETS)}")


def build_request_format(cfg: Mapping[str, Any]) -> RequestFormat:
    """The run's request format (``profile.request_format``, else its profile's own). The
    ``openai`` format's system message is read from the reference's pinned ``CLAG_memory.py``."""
    from eval.labels import request_format_name

    name = request_format_name(cfg)
    if name not in REQUEST_FORMATS:
        raise ConfigError(f"unknown profile.request_format {name!r}; valid: {', '.join(REQUEST_FORMATS)}")
    if name != "openai":
        return RequestFormat(name)
    profile, data = cfg.get("profile") or {}, cfg.get("data") or {}
    memory_file, _ = reference_files(profile.get("reference_dir"), data.get("root"),
                                     allow_download=bool(data.get("download", True)))
    return RequestFormat(name, reference_system_message(memory_file))
