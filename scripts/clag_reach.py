"""Where a CLAG-family run loses a question's gold evidence: in the clusters its first stage chose
to search, or in the ranking of the notes inside them.

Read from the run's own records only (``predictions.jsonl``: gold, retrieved ids and the clusters
searched; ``memory_stats.json``: the turns each cluster held at the end of its stream), per
question:

- **gold in reach**: the share of the question's gold turns held by the clusters stage 2
  searched (every turn, when the search fell back to the whole memory) — the highest recall the
  second stage could reach;
- **gold in the first cluster**: the share held by the first cluster the model selected. Stage 2
  takes the top 10 of each selected cluster and concatenates them in the model's order without
  ranking them against each other (the reference's way; ``stage2_rerank`` repairs it), so a first
  cluster of 10 notes or more fills the whole top 10 and the others' gold cannot reach it;
- **top 10 from the first cluster**: the share of the retrieved top 10 the first cluster holds
  (cluster searches only);
- **R@10** as scored.

Per run it prints the questions, how many searched globally, the clusters and notes searched,
the mean gold in reach, in the first cluster, the top 10's share from the first cluster, the
mean R@10, and R@10 over the gold in reach (how much of what was reachable the second stage
ranked into the top 10). A run made before CLAG recorded its
clusters' members (``cluster_members``) is listed as such, not scored.

    python scripts/clag_reach.py                       # the BioASQ power runs
    python scripts/clag_reach.py --runs results/runs   # any runs root
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eval.runs import RunRecord, find_runs  # noqa: E402

DEFAULT_RUNS = ROOT / "results" / "bioasq" / "qwen2.5-coder-0.5b" / "runs"


@dataclass(frozen=True)
class Reach:
    """One question: its gold, what stage 2 could see, and what it ranked in the top 10."""

    gold: int
    in_reach: int
    in_top10: int
    searched_globally: bool
    clusters_searched: int
    search_space: int
    #: gold held by the first selected cluster (all of it after a global search)
    in_first: int = 0
    #: of the retrieved top 10, how many the first selected cluster holds (None: a global search)
    top10_from_first: int | None = None
    top10: int = 0


def reach_of(row: Mapping, members: Mapping[str, Sequence[str]]) -> Reach | None:
    """A prediction row against its stream's cluster members; None for a question without gold."""
    gold = set(row.get("evidence") or [])
    if not gold:
        return None
    debug = row.get("retrieval_debug") or {}
    searched = list(debug.get("searched_clusters") or [])
    globally = debug.get("search_mode") != "cluster"
    reachable = None if globally else {t for cid in searched for t in members.get(cid, ())}
    in_reach = len(gold) if reachable is None else len(gold & reachable)
    top10 = set((row.get("retrieved_ids") or [])[:10])
    first = set(members.get(searched[0], ())) if searched and not globally else None
    return Reach(len(gold), in_reach, len(gold & top10), globally, len(searched),
                 int(debug.get("search_space_size") or 0),
                 in_first=len(gold) if first is None else len(gold & first),
                 top10_from_first=None if first is None else len(top10 & first), top10=len(top10))


def members_by_stream(run_dir: Path) -> dict[str, dict[str, list[str]]] | None:
    """Each stream's cluster members, or None when the run did not record them."""
    stats = json.loads((run_dir / "memory_stats.json").read_text(encoding="utf-8"))
    if not all("cluster_members" in s for s in stats):
        return None
    return {str(s["sample_id"]): s["cluster_members"] for s in stats}


def run_reach(run_dir: Path) -> list[Reach] | None:
    members = members_by_stream(run_dir)
    if members is None:
        return None
    lines = (run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    found = [reach_of(row, members.get(str(row["sample_id"]), {})) for row in rows]
    return [r for r in found if r is not None]


def summary(reaches: Sequence[Reach]) -> dict[str, float]:
    """Means over questions, ×100 for shares; R@10 of the reachable pools the gold in reach."""
    n = len(reaches)
    if not n:
        raise ValueError("no question with gold evidence to score")
    reachable = sum(r.in_reach for r in reaches)
    clustered = [r for r in reaches if r.top10_from_first is not None and r.top10]
    return {"questions": n,
            "searched globally": sum(r.searched_globally for r in reaches),
            "clusters searched": sum(r.clusters_searched for r in reaches) / n,
            "notes searched": sum(r.search_space for r in reaches) / n,
            "gold in reach": 100 * sum(r.in_reach / r.gold for r in reaches) / n,
            "gold in the first cluster": 100 * sum(r.in_first / r.gold for r in reaches) / n,
            "top 10 from the first cluster": 100 * sum(r.top10_from_first / r.top10 for r in clustered)
            / len(clustered) if clustered else 0.0,
            "R@10": 100 * sum(r.in_top10 / r.gold for r in reaches) / n,
            "R@10 of the reachable": 100 * sum(r.in_top10 for r in reaches) / reachable if reachable else 0.0}


def clag_runs(root: Path) -> list[RunRecord]:
    """The complete runs of CLAG and its variants (their directories are ``clag*``)."""
    return [run for run in find_runs(root) if run.method.startswith("clag")]


def report(root: Path) -> str:
    columns = ["questions", "searched globally", "clusters searched", "notes searched", "gold in reach",
               "gold in the first cluster", "top 10 from the first cluster", "R@10", "R@10 of the reachable"]
    lines = ["| run | streams | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 2)]
    for run in sorted(clag_runs(root), key=lambda r: (r.label, r.streams)):
        reaches = run_reach(run.path)
        name = f"{run.label} ({run.path.name})"
        if not reaches:
            why = "cluster members not recorded" if reaches is None else "no question with gold evidence"
            lines.append(f"| {name} | {', '.join(run.streams)} | {why} |" + " |" * (len(columns) - 1))
            continue
        figures = summary(reaches)
        cells = [f"{figures[c]:.0f}" if c in ("questions", "searched globally") else f"{figures[c]:.2f}"
                 for c in columns]
        lines.append(f"| {name} | {', '.join(run.streams)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help="a runs root")
    ns = parser.parse_args()
    if not ns.runs.is_dir():
        raise SystemExit(f"error: no runs root at {ns.runs}")
    print(report(ns.runs), end="")


if __name__ == "__main__":
    main()
