"""``eval score``: re-score any predictions file, so systems outside the harness compare fairly.

Input: JSON Lines, one object per question with at least ``prediction`` and ``answer``;
optionally ``category``, ``retrieved_ids`` (ranked turn ids), ``evidence`` (gold turn ids) and
``true_answer`` (LoCoMo category 5's correct label). A run's own ``predictions.jsonl`` qualifies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.errors import ScoreInputError
from eval.metrics import aggregate, score_prediction

REQUIRED = ("prediction", "answer")


def read_predictions(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ScoreInputError(f"{path} does not exist")
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ScoreInputError(f"{path} is not UTF-8 text") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScoreInputError(f"{path} line {number} is not valid JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise ScoreInputError(f"{path} line {number} is not a JSON object")
        missing = [key for key in REQUIRED if key not in row]
        if missing:
            raise ScoreInputError(f"{path} line {number} lacks {', '.join(missing)}")
        for key in ("retrieved_ids", "evidence"):
            if key in row and row[key] is not None and not isinstance(row[key], list):
                raise ScoreInputError(f"{path} line {number}: {key!r} must be a list of turn ids")
        category = row.get("category")
        if category is not None and (isinstance(category, bool) or not isinstance(category, int)):
            raise ScoreInputError(f"{path} line {number}: 'category' must be an integer")
        rows.append(row)
    if not rows:
        raise ScoreInputError(f"{path} holds no predictions")
    return rows


def score_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-question scores (input row + ``scores``) and the aggregate."""
    scored = []
    for row in rows:
        extra = row.get("extra") or {}
        scores = score_prediction(
            row["prediction"], row["answer"], row.get("category"),
            row.get("retrieved_ids"), row.get("evidence"),
            row.get("true_answer", extra.get("true_answer")),
        )
        scored.append({**row, "scores": scores})
    summary = aggregate((r.get("category"), r["scores"]) for r in scored)
    return scored, summary


def format_summary(summary: dict[str, Any]) -> str:
    """A compact table: one line per group, metrics ×100."""
    names = ["f1", "bleu1", "f1_corrected", "squad_f1", "locomo_f1", "e_precision", "e_recall",
             "e_f1", "recall@5", "recall@10", "ndcg@10"]
    present = [n for n in names if n in summary["overall"]]
    header = f"{'group':<12} {'n':>5} " + " ".join(f"{n:>12}" for n in present)
    lines = [header]
    for group, metrics in summary.items():
        if not isinstance(metrics, dict):
            continue
        count = max((m["count"] for m in metrics.values()), default=0)
        cells = " ".join(
            f"{100 * metrics[n]['mean']:>12.2f}" if n in metrics else f"{'—':>12}" for n in present
        )
        lines.append(f"{group:<12} {count:>5} {cells}")
    return "\n".join(lines)
