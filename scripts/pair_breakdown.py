"""Does one method answer worse than another only because it retrieved less of the gold?

Pairs two methods' runs on the questions both answered (the latest run of each, pooled over its
streams as the tables pool them) and splits the questions by which of the two put more of the
question's gold evidence into its top 10 (R@10). Per group: how many questions, each method's
mean F1 and R@10, and the mean F1 difference with its paired bootstrap 95% CI.

If the F1 gap lives only where the first method retrieved less, retrieval explains it; a gap
where both retrieved the same share of the gold is the answer step's (the prompt the retrieved
notes make, the model reading it). Read from the runs' own ``predictions.jsonl`` only.

    python scripts/pair_breakdown.py                         # clag against rag, BioASQ power runs
    python scripts/pair_breakdown.py --a clag --b amem --runs results/runs
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eval.runs import RunGroup, find_runs, latest_runs  # noqa: E402
from eval.stats import bootstrap_mean  # noqa: E402

DEFAULT_RUNS = ROOT / "results" / "bioasq" / "qwen2.5-coder-0.5b" / "runs"
GROUPS = ("a retrieved more", "both the same", "a retrieved less")


@dataclass(frozen=True)
class Paired:
    """One question both methods answered."""

    f1_a: float
    f1_b: float
    recall_a: float
    recall_b: float

    @property
    def group(self) -> str:
        if self.recall_a > self.recall_b:
            return GROUPS[0]
        return GROUPS[1] if self.recall_a == self.recall_b else GROUPS[2]


def pair(a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]]) -> list[Paired]:
    """Questions scored by both (keyed ``stream::question``), with gold (an R@10 to compare)."""
    shared = sorted(q for q in set(a) & set(b) if "recall@10" in a[q] and "recall@10" in b[q])
    return [Paired(a[q]["f1"], b[q]["f1"], a[q]["recall@10"], b[q]["recall@10"]) for q in shared]


def breakdown(pairs: Sequence[Paired]) -> list[dict[str, object]]:
    """One row per group (empty groups kept, so a reader sees that nothing fell there) and a total."""
    rows = []
    for name, members in [(g, [p for p in pairs if p.group == g]) for g in GROUPS] + [("all", list(pairs))]:
        row: dict[str, object] = {"group": name, "questions": len(members)}
        if members:
            n = len(members)
            diff = bootstrap_mean([p.f1_a - p.f1_b for p in members])
            row.update({"F1 a": 100 * sum(p.f1_a for p in members) / n,
                        "F1 b": 100 * sum(p.f1_b for p in members) / n,
                        "R@10 a": 100 * sum(p.recall_a for p in members) / n,
                        "R@10 b": 100 * sum(p.recall_b for p in members) / n,
                        "F1 a − b": 100 * diff.estimate, "CI": (100 * diff.low, 100 * diff.high)})
        rows.append(row)
    return rows


def scores_by_question(group: RunGroup) -> dict[str, dict[str, float]]:
    """F1 and R@10 per question (``stream::question``), from the group's own per-question scores."""
    f1, recall = group.per_question("f1"), group.per_question("recall@10")
    return {q: {"f1": v, **({"recall@10": recall[q]} if q in recall else {})} for q, v in f1.items()}


def find_method(groups: Mapping[tuple[str, str, str], RunGroup], method: str, data: str) -> RunGroup:
    found = [g for (m, d, _), g in groups.items() if d == data and m.split("@")[0] == method]
    if len(found) != 1:
        names = sorted({m for (m, d, _) in groups if d == data})
        raise SystemExit(f"error: {len(found)} setups of {method!r} on {data} "
                         f"(runs: {', '.join(names) or 'none'}); give a runs root holding one")
    return found[0]


def check_ranked(group: RunGroup, method: str) -> None:
    """R@10 splits the questions only for a method whose retrieved ids are a ranking of turns."""
    if any(r.get("retrieval_ranked") is False for r in group.predictions):
        raise SystemExit(f"error: {method}'s retrieved ids are not a ranking of turns (the lines of the "
                         "pages it read, in stream order), so its R@10 cannot tell which retrieved more")


def report(root: Path, a: str, b: str, data: str = "bioasq") -> str:
    groups = latest_runs(find_runs(root))
    found = {name: find_method(groups, name, data) for name in (a, b)}
    for name, group in found.items():
        check_ranked(group, name)
    rows = breakdown(pair(scores_by_question(found[a]), scores_by_question(found[b])))
    if not rows[-1]["questions"]:
        raise SystemExit(f"error: {a} and {b} answered no question in common with gold evidence")
    header = ["group (by R@10)", "questions", f"F1 {a}", f"F1 {b}", f"R@10 {a}", f"R@10 {b}",
              f"F1 {a} − {b} [95% CI]"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        label = str(row["group"]).replace("a ", f"{a} ", 1)
        if not row["questions"]:
            lines.append(f"| {label} | 0 |" + " |" * (len(header) - 2))
            continue
        low, high = row["CI"]  # type: ignore[misc]
        cells = [f"{row[k]:.2f}" for k in ("F1 a", "F1 b", "R@10 a", "R@10 b")]
        lines.append(f"| {label} | {row['questions']} | " + " | ".join(cells)
                     + f" | {row['F1 a − b']:+.2f} [{low:+.2f}, {high:+.2f}] |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help="a runs root")
    parser.add_argument("--a", default="clag", help="the method whose F1 gap is explained")
    parser.add_argument("--b", default="rag", help="the method it is set against")
    parser.add_argument("--data", default="bioasq")
    ns = parser.parse_args()
    if not ns.runs.is_dir():
        raise SystemExit(f"error: no runs root at {ns.runs}")
    print(report(ns.runs, ns.a, ns.b, ns.data), end="")


if __name__ == "__main__":
    main()
