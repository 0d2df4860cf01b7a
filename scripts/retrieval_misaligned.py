"""A labelled hypothesis for published retrieval figures that sit at or below chance: what a
method's own retrieved ids score when each question is scored against another question's gold.

    python scripts/retrieval_misaligned.py [--runs results/bioasq/qwen2.5-coder-0.5b/runs] [--method rag]

For every question of the method's runs (pooled over streams as the tables pool them) it prints
the evidence metrics three ways, all from the run records: as scored (the question's own gold),
against the gold of the next question of the same stream (a cyclic shift: ids and gold out of
step by one question, as a mis-joined evaluation would pair them), and the exact chance row of a
random ranking of the stream. This measures what one kind of evaluation error would produce; it
does not show that the paper made it.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METRICS = ("e_precision", "e_recall", "e_f1", "recall@5", "recall@10", "ndcg@10", "ndcg@10_retrieved_ideal")
LABELS = ("E-Prec", "E-Recall", "E-F1", "R@5", "R@10", "nDCG@10", "nDCG@10 (retrieved ideal)")


def misaligned_scores(predictions: list[dict]) -> list[dict[str, float]]:
    """Each question's retrieved ids scored against the next question's gold in its stream."""
    from eval.metrics.retrieval import retrieval_scores

    by_stream: dict[str, list[dict]] = defaultdict(list)
    for row in predictions:
        if row.get("evidence"):
            by_stream[str(row["sample_id"])].append(row)
    scores = []
    for rows in by_stream.values():
        for i, row in enumerate(rows):
            other = rows[(i + 1) % len(rows)]
            scores.append(retrieval_scores(row["retrieved_ids"], other["evidence"]))
    return scores


def main() -> None:
    from eval.metrics.chance import chance_scores
    from eval.runs import find_runs, latest_runs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path,
                        default=ROOT / "results" / "bioasq" / "qwen2.5-coder-0.5b" / "runs")
    parser.add_argument("--method", default="rag", help="the method's name (its label starts with it)")
    ns = parser.parse_args()
    groups = [g for (label, data, _), g in latest_runs(find_runs(ns.runs)).items()
              if data == "bioasq" and label.partition("@")[0] == ns.method]
    if not groups:
        sys.exit(f"error: no complete {ns.method} run on bioasq under {ns.runs}")
    for group in groups:
        rows = [r for r in group.predictions if r.get("evidence")]
        sizes = {str(s["sample_id"]): s["turns"] for s in group.memory_stats}
        own = [r["scores"] for r in rows]
        shifted = misaligned_scores(rows)
        chance = [chance_scores(sizes[str(r["sample_id"])], len(set(r["evidence"]))) for r in rows]
        print(f"{group.label}: {len(rows)} questions, streams {', '.join(group.streams)}")
        print(f"{'':<26}" + "".join(f"{m:>10}" for m in LABELS[:-1]) + f"  {LABELS[-1]}")
        for name, table in (("as scored (own gold)", own), ("next question's gold", shifted),
                            ("chance (random ranking)", chance)):
            means = [100 * sum(s[m] for s in table) / len(table) for m in METRICS]
            print(f"{name:<26}" + "".join(f"{v:>10.2f}" for v in means))


if __name__ == "__main__":
    main()
