"""Dataset loading for every data config, all producing :class:`~eval.data.contract.Dataset`.

``load_dataset(data_cfg)`` takes the ``data`` group of the Hydra config (``configs/data/*.yaml``):
its ``loader._target_`` is the function that builds the dataset, called with ``root=<data root>``
and the config's top-level keys its signature names (the function is the schema; the YAML says
each value once, and ``data.<key>=…`` overrides it). A dataset exists by having a YAML file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clag.errors import UserFacingError
from eval.data.contract import Dataset, select
from eval.data.sources import data_root
from eval.errors import ConfigError


def load_dataset(cfg: Mapping[str, Any]) -> Dataset:
    """Load the dataset a ``data`` config names, then apply its subset options."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    loader = cfg.get("loader")
    if not isinstance(loader, Mapping) or not loader.get("_target_"):
        raise ConfigError(f"data {cfg.get('name')!r} names no loader (data.loader._target_)")
    args = _loader_arguments(cfg, str(loader["_target_"]))
    args.update({k: v for k, v in dict(loader).items() if k != "_target_"})   # stated in the block: wins
    root = data_root(cfg.get("root"))
    try:
        dataset = instantiate({"_target_": loader["_target_"], **args}, root=root, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, UserFacingError):     # the loader's own one-line error (a missing file …)
            raise cause from None
        raise ConfigError(f"data {cfg.get('name')!r}: {cause or exc}") from None
    subset = cfg.get("subset") or {}
    if subset.get("pick") not in (None, "most_answerable"):
        raise ConfigError(f"unknown data.subset.pick {subset['pick']!r}; valid: most_answerable")
    if any(v is not None for v in dict(subset).values()):
        dataset = select(
            dataset,
            samples=subset.get("samples"),
            questions_per_sample=subset.get("questions_per_sample"),
            categories=list(subset["categories"]) if subset.get("categories") else None,
            sample_ids=[str(s) for s in subset["sample_ids"]] if subset.get("sample_ids") else None,
            turns=subset.get("turns"),
            answerable=subset.get("answerable"),
            pick=subset.get("pick"),
        )
    return dataset


def _loader_arguments(cfg: Mapping[str, Any], target: str) -> dict[str, Any]:
    """The data config's top-level keys that the loader function takes (``root`` is resolved here)."""
    import inspect

    from hydra.utils import get_method

    try:
        parameters = inspect.signature(get_method(target)).parameters
    except (ImportError, AttributeError, ValueError):     # Hydra's messages span several lines
        raise ConfigError(f"data {cfg.get('name')!r}: loader {target!r} not found "
                          "(not importable, or not a function)") from None
    return {k: v for k, v in cfg.items() if k in parameters and k != "root"}


def as_hf_dataset(dataset: Dataset, cache_dir: Path | None = None):
    """The dataset as a ``datasets.Dataset`` (one row per sample), cached as Arrow when asked.

    The cache folder is keyed by the source files' checksums, so a changed file never reuses a
    stale cache.
    """
    import hashlib
    import json

    import datasets

    if cache_dir is not None:
        key = hashlib.sha256(repr(sorted(dataset.files.items())).encode()).hexdigest()[:16]
        target = Path(cache_dir) / f"{dataset.name}-{key}"
        if target.exists():
            return datasets.load_from_disk(str(target))
    rows = []
    for record in dataset.to_records():
        for q in record["questions"]:
            q["extra"] = json.dumps(q["extra"], sort_keys=True)  # keys vary by dataset
        rows.append(record)
    hf = datasets.Dataset.from_list(rows)
    if cache_dir is not None:
        hf.save_to_disk(str(target))
    return hf


__all__ = ["Dataset", "as_hf_dataset", "load_dataset", "select"]
