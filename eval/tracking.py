"""Experiment tracking: ``logger=wandb`` logs a run's config, metrics, ledger and tables.

Offline by default (``logger.mode=offline``: files under the run directory, sync later with
``wandb sync``); ``disabled`` turns every call into a no-op. Nothing here may break a run: a
tracking failure is reported once and the run goes on.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any


def check_logger(logger_cfg: dict[str, Any] | None) -> None:
    """Refuse ``logger=wandb`` without wandb before a run starts (it is an extra), not after it."""
    if not _tracking(logger_cfg):
        return
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        from eval.errors import ConfigError

        raise ConfigError("logger=wandb needs wandb: pip install -e '.[wandb]' (or logger=none)")


def _tracking(logger_cfg: dict[str, Any] | None) -> bool:
    return bool(logger_cfg) and logger_cfg.get("name") == "wandb" and logger_cfg.get("mode") != "disabled"


def log_run(logger_cfg: dict[str, Any] | None, resolved: dict[str, Any], run_dir: Path,
            metrics: dict[str, Any], ledger: dict[str, Any]) -> str | None:
    """Log one finished run; returns the wandb run directory, or None when not tracking."""
    if not _tracking(logger_cfg):
        return None
    try:
        import wandb

        os.environ.setdefault("WANDB_SILENT", "true")
        run = wandb.init(project=logger_cfg.get("project", "clag-bench"), entity=logger_cfg.get("entity"),
                         mode=logger_cfg.get("mode", "offline"), dir=str(run_dir),
                         name=run_dir.name, group=f"{resolved['data']['name']}/{resolved['method']['name']}",
                         config=resolved, reinit="finish_previous")
        flat = {}
        for group, values in metrics.items():
            if isinstance(values, dict):
                for name, stat in values.items():
                    flat[f"{group}/{name}"] = stat["mean"]
        flat["questions"] = metrics.get("questions", 0)
        run.log(flat)
        by_tag = ledger.get("by_tag", {})
        columns = ["tag", "calls", "cache_hits", "prompt_tokens", "completion_tokens", "latency_s",
                   "parse_failures"]
        run.log({"ledger": wandb.Table(columns=columns,
                                       data=[[tag] + [stats.get(c, 0) for c in columns[1:]]
                                             for tag, stats in by_tag.items()])})
        run.summary.update(flat)
        run.finish()
        return str(run_dir / "wandb")
    except Exception as exc:  # tracking is optional: report it, keep the results
        warnings.warn(f"wandb logging failed ({type(exc).__name__}: {exc}); the run's files are intact",
                      stacklevel=2)
        return None
