"""Figures for the tables folder (PNG + PDF): F1 with CIs, CLAG's clusters, LLM cost."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from eval.runs import RunRecord  # noqa: E402
from eval.stats import bootstrap_mean  # noqa: E402


def _save(fig, folder: Path, name: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.png", folder / f"{name}.pdf"]
    for path in paths:
        fig.savefig(path, bbox_inches="tight", dpi=150)
    plt.close(fig)
    return paths


def f1_by_method(runs: list[RunRecord], folder: Path, seed: int = 0) -> list[Path]:
    datasets = sorted({r.data for r in runs})
    methods = sorted({r.label for r in runs})
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(datasets) * max(1, len(methods)) / 2), 3.2))
    width = 0.8 / max(1, len(methods))
    for m, method in enumerate(methods):
        means, lows, highs = [], [], []
        for data in datasets:
            run = next((r for r in runs if r.label == method and r.data == data), None)
            values = np.array(list(run.per_question("f1").values())) if run else np.array([])
            if values.size:
                ci = bootstrap_mean(values, seed=seed)
                means.append(100 * ci.estimate)
                lows.append(100 * (ci.estimate - ci.low))
                highs.append(100 * (ci.high - ci.estimate))
            else:
                means.append(np.nan)
                lows.append(0)
                highs.append(0)
        x = np.arange(len(datasets)) + m * width
        ax.bar(x, means, width, yerr=[lows, highs], capsize=3, label=method)
    ax.set_xticks(np.arange(len(datasets)) + width * (len(methods) - 1) / 2, datasets)
    ax.set_ylabel("F1 (×100), 95% CI")
    ax.legend(fontsize=7, ncol=3)
    return _save(fig, folder, "f1_by_method")


def clag_clusters(runs: list[RunRecord], folder: Path) -> list[Path]:
    clag_runs = [r for r in runs if any("cluster_sizes" in s for s in r.memory_stats)]
    if not clag_runs:
        return []
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2))
    for run in clag_runs:
        sizes = [size for s in run.memory_stats for size in s.get("cluster_sizes", {}).values()]
        left.hist(sizes, bins=20, alpha=0.5, label=f"{run.label}/{run.data}")
        reduction: dict[str, list[float]] = defaultdict(list)
        for row in run.predictions:
            debug = row.get("retrieval_debug", {})
            total = debug.get("total_memories") or 0
            if total:
                reduction[row["sample_id"]].append(1 - debug.get("search_space_size", total) / total)
        streams = sorted(reduction)
        right.plot(range(len(streams)), [100 * np.mean(reduction[s]) for s in streams], marker="o",
                   label=f"{run.label}/{run.data}")
    left.set_xlabel("cluster size (notes)")
    left.set_ylabel("clusters")
    right.set_xlabel("stream")
    right.set_ylabel("search-space reduction (%)")
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    return _save(fig, folder, "clag_clusters")


def cost_per_method(runs: list[RunRecord], folder: Path) -> list[Path]:
    labels, calls, tokens = [], [], []
    for run in sorted(runs, key=lambda r: (r.data, r.label)):
        questions = max(run.metrics.get("questions", 0), 1)
        total = run.ledger.get("total", {})
        labels.append(f"{run.label}\n{run.data}")
        calls.append(total.get("calls", 0) / questions)
        tokens.append((total.get("prompt_tokens", 0) + total.get("completion_tokens", 0)) / questions)
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(6, 0.9 * len(labels)), 3.2))
    left.bar(labels, calls)
    left.set_ylabel("LLM calls per question (all phases)")
    right.bar(labels, tokens)
    right.set_ylabel("tokens per question (fresh calls)")
    for ax in (left, right):
        ax.tick_params(axis="x", labelsize=6)
    return _save(fig, folder, "cost")


def health_by_method(runs: list[RunRecord], folder: Path) -> list[Path]:
    """How each run's model behaved (its health report): the share of calls that ran to the
    token cap, of replies that did not parse, and of replies that copied the prompt's example;
    a flagged run's label carries the table's mark."""
    from eval.tables import HEALTH_MARK

    labels, shares = [], {"capped": [], "unparsable": [], "copied an example": []}
    for run in sorted(runs, key=lambda r: (r.data, r.label)):
        overall = run.health["overall"]
        calls = max(overall["calls"], 1)
        labels.append(f"{run.label}{'' if run.health['healthy'] else HEALTH_MARK}\n{run.data}")
        shares["capped"].append(100 * overall["capped_rate"])
        shares["unparsable"].append(100 * overall["unparsable_rate"])
        shares["copied an example"].append(100 * (overall.get("placeholder_copies") or 0) / calls)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(labels)), 3.2))
    width = 0.8 / len(shares)
    for i, (name, values) in enumerate(shares.items()):
        ax.bar(np.arange(len(labels)) + i * width, values, width, label=name)
    ax.set_xticks(np.arange(len(labels)) + width * (len(shares) - 1) / 2, labels)
    ax.set_ylabel("% of LLM calls")
    ax.tick_params(axis="x", labelsize=6)
    ax.legend(fontsize=7)
    return _save(fig, folder, "health")


def make_plots(runs: list[RunRecord], folder: Path, seed: int = 0) -> list[Path]:
    if not runs:
        return []
    return (f1_by_method(runs, folder, seed) + clag_clusters(runs, folder) + cost_per_method(runs, folder)
            + health_by_method(runs, folder))
