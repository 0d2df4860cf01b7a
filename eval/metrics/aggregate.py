"""Means over questions: overall (pooled across streams, as the reference does) and per category.

Every metric is averaged over the questions that have it: answer metrics over all questions,
retrieval metrics over the questions with gold evidence. Each mean carries its count, so a
denominator is never silently different from what a table claims.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any


def _means(rows: list[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    values: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for name, value in row.items():
            if value is not None:
                values[name].append(float(value))
    return {name: {"mean": sum(v) / len(v), "count": len(v)} for name, v in sorted(values.items())}


def aggregate(scored: Iterable[tuple[int | None, Mapping[str, float]]]) -> dict[str, Any]:
    """``scored`` yields (category, metric → value); returns overall and ``category_<n>`` means
    (rows without a category count in ``overall`` only)."""
    by_category: dict[Any, list[Mapping[str, float]]] = defaultdict(list)
    everything: list[Mapping[str, float]] = []
    for category, metrics in scored:
        everything.append(metrics)
        by_category[category].append(metrics)
    result: dict[str, Any] = {"questions": len(everything), "overall": _means(everything)}
    for category in sorted(c for c in by_category if c is not None):
        result[f"category_{category}"] = _means(by_category[category])
    return result
