"""Config keys that changed name, in one place: the command line's hint for an old key, and how a
run recorded before the change reads in today's terms.

Why the second: runs made one stream at a time are pooled by the hash of what they computed
(:func:`eval.identity.setup_hash`), and a run recorded under an old key name computed exactly what
today's name asks for. Read in today's terms, it pools with the runs made after the rename, and
its record stays as it was written.
"""

from __future__ import annotations

import copy
from typing import Any

#: old key → what says the same now (Hydra itself would suggest ``+old.key=…``, a key nothing reads)
_ONE_FORMAT = "how a prompt reaches the model is one key, profile.request_format=raw|chat|openai"
REPLACED_KEYS = {
    "profile.request_shape": f"{_ONE_FORMAT} (request_shape=sglang is raw)",
    "llm.prompt_format": f"{_ONE_FORMAT} (prompt_format=chat is chat)",
}


def in_current_terms(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a resolved run config) with its old keys under today's names: a recorded
    ``profile.request_shape`` and ``llm.prompt_format`` become the one ``profile.request_format``
    they amounted to (the ``openai`` shape whatever the prompt format; else ``chat`` or ``raw``
    as the prompt format said). A config in today's terms comes back equal."""
    profile = config.get("profile")
    llm = config.get("llm")
    shape = profile.get("request_shape") if isinstance(profile, dict) else None
    prompt_format = llm.get("prompt_format") if isinstance(llm, dict) else None
    if shape is None and prompt_format is None:
        return config
    config = copy.deepcopy(config)
    if isinstance(llm, dict):
        config["llm"].pop("prompt_format", None)
    if shape is not None:
        del config["profile"]["request_shape"]
        config["profile"]["request_format"] = "openai" if shape == "openai" else (
            "chat" if prompt_format == "chat" else "raw")
    return config
