"""Paired bootstrap confidence intervals over questions.

Two methods answered the same questions; resampling questions with replacement (the same
resample for both) gives the distribution of the difference of their means. Percentile
intervals; seeded, so a table is reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int


def bootstrap_mean(values: np.ndarray, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> Interval:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Interval(float(values.mean()), float(low), float(high), int(values.size))


def paired_difference(a: Mapping[str, float], b: Mapping[str, float], resamples: int = 2000,
                      seed: int = 0, level: float = 0.95) -> Interval | None:
    """Mean of a − b over the questions both answered, with its bootstrap interval."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    diffs = np.array([a[q] - b[q] for q in shared])
    return bootstrap_mean(diffs, resamples, seed, level)
