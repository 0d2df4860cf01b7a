"""The BioASQ power runs: every method of the paper's three BioASQ tables (and ``clag_plus``) on
streams 3, 4 and 7 (60 questions), RAG on all ten streams (200), one run per method and stream,
under the setup the quality anchor validated, one run at a time.

    python scripts/bioasq_power.py                 # the progress table: which runs are complete
    python scripts/bioasq_power.py run             # run every pending job in order, one at a time
    python scripts/bioasq_power.py run --only clag:4 --only rag   # some jobs only
    python scripts/bioasq_power.py command clag 4  # the command of one job, to run by hand
    python scripts/bioasq_power.py tables          # the committed tables, from the committed runs
    python scripts/bioasq_power.py anchor          # clag:3 beside the anchor's seed-42 run, figure by figure

Why one run per stream: a CLAG-family method costs 70–140 minutes per stream on 2 cores, so a
stream is the unit that finishes, is committed and is never lost; the tables pool a setup's runs
on disjoint streams into one cell (``eval.runs.pooled``), and since seeds are scoped per stream
and question, the pooled runs score what one run over the three streams would. A job is done
when a complete run of its method and setup exists for its stream; the same command resumes an
interrupted one. Records go under ``results/bioasq/qwen2.5-coder-0.5b/runs/`` (their request logs,
timings and snapshots stay out of git); ``tables`` rebuilds ``results/bioasq/tables/`` from them:
``streams-3-4-7`` (every method on the same 60 questions) and ``all-streams`` (RAG on 200).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LLM = "qwen2.5-coder-0.5b"
RUNS = ROOT / "results" / "bioasq" / LLM / "runs"
#: the anchor's setup: the reference's prompts sent as its OpenAI controller sent them, decoded
#: with llama-cpp-python's server defaults, in process (a rerun on the same build gave the same rows)
SETUP = ["profile=reference", "profile.request_format=openai", "decoding=llama-cpp-python", "seed=42"]
SETUP_NAME = "reference+openai+llama-cpp-python"
METHODS = ("rag", "gam", "memoryos", "amem", "clag", "clag_kmeans", "clag_cosine", "clag_plus")
STREAMS = (3, 4, 7)
#: methods run on every stream too (their whole-dataset run costs under an hour)
WHOLE_DATASET = {"rag": tuple(range(10))}


@dataclass(frozen=True)
class Job:
    method: str
    stream: int

    @property
    def name(self) -> str:
        return f"{self.method}:{self.stream}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "eval", "run", f"method={self.method}", "data=bioasq", f"llm={LLM}",
                *SETUP, f"data.subset.sample_ids=[{self.stream}]", f"results_root={RUNS.relative_to(ROOT)}"]


#: the order the claims are decided in: the paper's main table (its first two claims) on all three
#: streams, then the clustering ablations (its third), then this harness's own variant
CLAIM_TIERS = (("rag", "gam", "memoryos", "amem", "clag"), ("clag_kmeans", "clag_cosine"), ("clag_plus",))


def jobs() -> list[Job]:
    """RAG's other streams first (minutes), then tier by tier of ``CLAIM_TIERS``, each tier stream by
    stream: a claim is decided on all 60 questions before the next claim's runs start, and within a
    tier whatever has finished is a paired comparison on the same questions."""
    out = [Job(m, s) for m, streams in WHOLE_DATASET.items() for s in streams if s not in STREAMS]
    out += [Job(m, s) for tier in CLAIM_TIERS for s in STREAMS for m in tier]
    return out


def run_state(run_dir: Path) -> str:
    try:
        return json.loads((run_dir / "status.json").read_text(encoding="utf-8")).get("state", "?")
    except (OSError, ValueError):
        return "?"


def job_runs(job: Job) -> list[Path]:
    """The job's run directories, oldest first (one stream, its method under the setup)."""
    import yaml

    base = RUNS / "bioasq" / f"{job.method}@{SETUP_NAME}" / LLM
    found = []
    for run_dir in sorted(base.glob("*")) if base.is_dir() else []:
        try:
            config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
        except OSError:
            continue
        if list(((config.get("data") or {}).get("subset") or {}).get("sample_ids") or []) == [job.stream]:
            found.append(run_dir)
    return found


def wall_time(run_dir: Path) -> str:
    """From the run's first start (``env.json``) to its end (``status.json``), and its ingest share;
    a resumed run's figure includes the time it was stopped."""
    from datetime import datetime

    env = json.loads((run_dir / "env.json").read_text(encoding="utf-8"))
    ended = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))["time"]
    started = datetime.fromisoformat(env["created"]).timestamp()
    stats = json.loads((run_dir / "memory_stats.json").read_text(encoding="utf-8"))
    ingest = sum(s.get("ingest_seconds", 0.0) for s in stats)
    text = f"{(ended - started) / 60:.1f} min ({ingest / 60:.1f} ingest)"
    resumed = bool(env.get("resumes"))
    return text + (" resumed" if resumed else "") + cpu_time(run_dir, resumed)


def cpu_time(run_dir: Path, resumed: bool) -> str:
    """The run's CPU time (``status.json``), which a resumed run's wall time cannot stand in for.
    Runs made before ``cpu_s`` added a resumed run's earlier sessions record the last process
    only; those, and runs with a session killed before it wrote its share, say ``partial``."""
    status = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))
    if status.get("cpu_s") is None:
        return ""
    whole = status.get("cpu_whole", not resumed)
    return f"; CPU {status['cpu_s'] / 3600:.2f} h" + ("" if whole else " (partial)")


def progress_row(job: Job) -> list[str]:
    runs = job_runs(job)
    if not runs:
        return [job.method, str(job.stream), "pending", "", "", "", "", ""]
    run_dir = runs[-1]
    state = run_state(run_dir)
    wall = questions = f1 = health = calls = ""
    if state == "complete":
        wall = wall_time(run_dir)
        total = json.loads((run_dir / "ledger.json").read_text(encoding="utf-8"))["total"]
        calls = f"{total['calls']:,} ({total['cache_hits']:,} cached)"
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        questions = str(metrics.get("questions", ""))
        f1 = f"{100 * metrics['overall']['f1']['mean']:.2f}"
        report = json.loads((run_dir / "health.json").read_text(encoding="utf-8"))
        health = "ok" if report.get("healthy") else f"{len(report.get('flags', []))} flag(s)"
    score = f1 + (f" ({health})" if health else "")
    return [job.method, str(job.stream), state, run_dir.name, wall, calls, questions, score]


def progress() -> str:
    lines = ["| method | stream | state | run | time | LLM calls (from the request cache) | questions "
             "| F1 (health) |", "|---" * 8 + "|"]
    lines += ["| " + " | ".join(progress_row(job)) + " |" for job in jobs()]
    return "\n".join(lines)


#: clag:3 is the anchor's seed-42 command (``results/anchor/comparison.json``) on later code
ANCHOR = ROOT / "results" / "anchor" / "comparison.json"
ANCHOR_SETUP = f"{SETUP_NAME} (in process)"
#: the figures compared: per-question scores, per-call counts and token means, the clusters
ANCHOR_FIGURES = ("f1_by_question", "bleu1_by_question", "recall@10_by_question", "per_tag", "clusters",
                  "cluster_sizes", "evolutions", "links", "should_evolve", "routing_reasons")


def figure_differences(anchor: dict, now: dict) -> list[tuple[str, object, object]]:
    """(figure, anchor's value, this run's) for each compared figure that differs, one level
    into dicts (``per_tag.evolve``), so a difference in the per-call figures names its call tag."""
    out: list[tuple[str, object, object]] = []
    for key in ANCHOR_FIGURES:
        a, b = anchor.get(key), now.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            for sub in sorted(set(a) | set(b)):
                if a.get(sub) != b.get(sub):
                    out.append((f"{key}.{sub}", a.get(sub), b.get(sub)))
        elif a != b:
            out.append((key, a, b))
    return out


def anchor_report() -> str:
    """clag:3 against the anchor's seed-42 run, the same command on later code: a figure that moved
    names the call tag where the runs parted (a change that reached a request, or another build
    or CPU: ``env.json`` records both since the anchor ran)."""
    from eval.runs import RunRecord
    from scripts.anchor_compare import run_figures

    stored = json.loads(ANCHOR.read_text(encoding="utf-8"))[ANCHOR_SETUP]["runs"]
    anchor = next(r for r in stored if r.get("seed") == 42)
    runs = job_runs(Job("clag", 3))
    if not runs or run_state(runs[-1]) != "complete":
        return "clag:3 has no complete run yet"
    run = RunRecord(runs[-1], *runs[-1].parts[-4:-1])      # <data>/<method>/<llm>/<run>
    differences = figure_differences(anchor, run_figures(run))
    head = f"clag:3 ({runs[-1].name}) vs the anchor's seed-42 run ({anchor['run']}): "
    if not differences:
        return head + f"every compared figure is the same ({', '.join(ANCHOR_FIGURES)})"
    lines = [head + f"{len(differences)} figure(s) differ", "| figure | anchor | clag:3 |", "|---|---|---|"]
    lines += [f"| {key} | {a} | {b} |" for key, a, b in differences]
    return "\n".join(lines)


#: the committed tables: (folder under results/bioasq/tables, streams kept or None for every stream)
TABLE_SETS = (("streams-3-4-7", STREAMS), ("all-streams", None))
TABLES = ROOT / "results" / "bioasq" / "tables"


def tables_command(folder: str, streams: tuple[int, ...] | None, out: Path = TABLES) -> list[str]:
    """The ``eval tables`` command that writes one committed table set (no plots: their files are
    not byte-stable, and the test regenerates the tables byte for byte)."""
    command = ["tables", "--runs", str(RUNS.relative_to(ROOT)), "--out", str(out / folder), "--no-plots"]
    if streams:
        command += ["--streams", ",".join(map(str, streams))]
    return command


def write_tables(out: Path = TABLES) -> None:
    for folder, streams in TABLE_SETS:
        subprocess.run([sys.executable, "-m", "eval", *tables_command(folder, streams, out)], cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)


def selected(only: list[str] | None) -> list[Job]:
    if not only:
        return jobs()
    chosen = []
    for job in jobs():
        if any(o == job.method or o == job.name for o in only):
            chosen.append(job)
    if not chosen:
        raise SystemExit(f"error: no job matches {only}; jobs are METHOD or METHOD:STREAM of "
                         f"{', '.join(METHODS)} and streams {STREAMS}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action")
    run = sub.add_parser("run", help="run the pending jobs in order, one at a time")
    run.add_argument("--only", action="append", help="METHOD or METHOD:STREAM (repeatable)")
    run.add_argument("--max", type=int, default=None, help="stop after this many jobs")
    sub.add_parser("tables", help="write the committed tables from the committed runs")
    sub.add_parser("anchor", help="clag:3 beside the anchor's seed-42 run, figure by figure")
    command = sub.add_parser("command", help="print one job's command")
    command.add_argument("method", choices=METHODS)
    command.add_argument("stream", type=int)
    ns = parser.parse_args()
    if ns.action == "command":
        print(" ".join(f"'{a}'" if "[" in a else a for a in Job(ns.method, ns.stream).command()[1:]))
        return
    if ns.action == "tables":
        write_tables()
        print(f"wrote {', '.join(folder for folder, _ in TABLE_SETS)} under {TABLES.relative_to(ROOT)}")
        return
    if ns.action == "anchor":
        print(anchor_report())
        return
    if ns.action != "run":
        print(progress())
        return
    done = 0
    for job in selected(ns.only):
        runs = job_runs(job)
        if runs and run_state(runs[-1]) == "complete":
            continue
        if ns.max is not None and done >= ns.max:
            break
        print(f"[power] {job.name}: {' '.join(job.command()[1:])}", flush=True)
        result = subprocess.run(job.command(), cwd=ROOT)
        print(f"[power] {job.name}: exit {result.returncode}", flush=True)
        if result.returncode != 0:
            raise SystemExit(result.returncode)
        done += 1
    print(progress())


if __name__ == "__main__":
    main()
