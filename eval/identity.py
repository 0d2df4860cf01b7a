"""What a run computed, as one short hash: the run directory's suffix, the key that resumes an
interrupted run, and (without the streams) what pools runs made one stream at a time.

Its own module because the runner (which files runs) and the run readers (which pool them) both
need it and must not import each other.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: keys that change how a run is shown, not what it computes (left out of the config hash)
PRESENTATION_KEYS = ("progress", "debug", "results_root", "snapshot_dir", "logger", "health", "skip_complete")


def config_hash(config: dict[str, Any]) -> str:
    """A short, stable hash of a resolved config (key order does not matter)."""
    canonical = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


def semantic_config(resolved: dict) -> dict:
    """The resolved config without the keys that only present a run."""
    return {k: v for k, v in resolved.items() if k not in PRESENTATION_KEYS}


def setup_hash(resolved: dict) -> str:
    """The hash of what a run computed, whichever streams it ran on: :func:`semantic_config`
    without ``data.subset.sample_ids``, in today's key names (a run recorded under an old name
    pools with the same setup run since)."""
    from eval.renamed_keys import in_current_terms

    config = in_current_terms(json.loads(json.dumps(semantic_config(resolved or {}), default=str)))
    subset = (config.get("data") or {}).get("subset")
    if isinstance(subset, dict):
        subset.pop("sample_ids", None)
    return config_hash(config)
