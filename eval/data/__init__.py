"""Dataset loaders behind one registry, all producing :class:`~eval.data.contract.Dataset`.

``load_dataset(data_cfg)`` takes the ``data`` group of the Hydra config (``configs/data/*.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clag.registry import Registry, UnknownNameError
from eval.data.contract import Dataset, select
from eval.data.sources import data_root
from eval.errors import ConfigError

Loader = Callable[[Path, Mapping[str, Any]], Dataset]
DATASETS: Registry[Loader] = Registry("dataset")


def _locomo(root: Path, cfg: Mapping[str, Any]) -> Dataset:
    from eval.data.locomo import load_locomo

    return load_locomo(root, file=cfg.get("file") or "locomo/locomo10.json",
                       allow_download=bool(cfg.get("download", True)),
                       caption_rule=str(cfg.get("caption_rule") or "reference"))


def _hotpotqa(root: Path, cfg: Mapping[str, Any]) -> Dataset:
    from eval.data import hotpotqa

    source = cfg.get("source", "paper")
    download = bool(cfg.get("download", True))
    if source == "paper":
        return hotpotqa.load_hotpot200(root, cfg.get("file") or hotpotqa.PAPER_FILE, download)
    chunking = {"chunk_size": int(cfg.get("chunk_size", 20)),
                "num_chunks": int(cfg.get("num_chunks", 10)),
                "seed": cfg.get("shuffle_seed")}
    if source == "raw":
        return hotpotqa.load_hotpot_raw(root, cfg.get("raw_file") or hotpotqa.RAW_FILE,
                                        allow_download=download, **chunking)
    if source == "hub":
        return hotpotqa.load_hotpot_hub(**chunking)
    raise ConfigError(f"unknown data.source {source!r} for hotpotqa; valid: paper, raw, hub")


def _bioasq(root: Path, cfg: Mapping[str, Any]) -> Dataset:
    from eval.data.bioasq import DEFAULT_GLOB, load_bioasq

    return load_bioasq(root, golden_glob=cfg.get("golden_glob") or DEFAULT_GLOB,
                       chunk_size=int(cfg.get("chunk_size", 20)),
                       num_chunks=int(cfg.get("num_chunks", 10)),
                       seed=int(cfg.get("seed", 42)),
                       dedup_snippets=bool(cfg.get("dedup_snippets", True)))


DATASETS.register("locomo", _locomo)
DATASETS.register("hotpotqa", _hotpotqa)
DATASETS.register("bioasq", _bioasq)


def load_dataset(cfg: Mapping[str, Any]) -> Dataset:
    """Load the dataset a ``data`` config names, then apply its subset options."""
    name = cfg.get("name")
    try:
        loader = DATASETS.get(str(name))
    except UnknownNameError as exc:
        raise ConfigError(str(exc)) from None
    dataset = loader(data_root(cfg.get("root")), cfg)
    subset = cfg.get("subset") or {}
    if any(v is not None for v in dict(subset).values()):
        dataset = select(
            dataset,
            samples=subset.get("samples"),
            questions_per_sample=subset.get("questions_per_sample"),
            categories=list(subset["categories"]) if subset.get("categories") else None,
            sample_ids=[str(s) for s in subset["sample_ids"]] if subset.get("sample_ids") else None,
            turns=subset.get("turns"),
            answerable=subset.get("answerable"),
        )
    return dataset


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


__all__ = ["DATASETS", "Dataset", "as_hf_dataset", "load_dataset", "select"]
