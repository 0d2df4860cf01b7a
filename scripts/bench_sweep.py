"""The paper presets at full scale against the stand-in server: does a whole sweep finish, fill
every reproduced cell, and keep the harness from being the bottleneck?

    python scripts/bench_sweep.py                          # paper_main_server, then paper_ablation
    python scripts/bench_sweep.py --smoke                  # the same on the smoke subset (minutes)
    python scripts/bench_sweep.py --experiment paper_main_server --jobs 4

The stand-in (``scripts/standin_server.py``) answers every request in milliseconds with a reply
valid for its schema, so the sweep runs every stream and question of LoCoMo (10 conversations,
1,986 questions), HotpotQA (200) and BioASQ (200) through the real harness — data loading,
embedding, each method's memory, the request path, scoring, tables — with no model. Scores mean
nothing; what it measures is the harness:

- per preset: wall time, the sweep's CPU time and peak RSS (its processes, from the kernel), the
  most requests in flight at the stand-in, and the share of the stand-in's capacity it used
  (requests per second during the sweep over what the stand-in answers when hammered);
- per run (each run's ``status.json``): CPU seconds, per memory and per question;
- whether ``python -m eval tables`` fills every reproduced cell of the preset's paper tables.

Writes results/bench/sweep.json (``--out`` elsewhere). CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.bench_common import ROOT, write_result  # noqa: E402
from scripts.standin_server import StandInServer, measure_capacity  # noqa: E402

#: each preset, the paper tables it fills, and what points it at the stand-in
PRESETS: dict[str, dict[str, Any]] = {
    "paper_main_server": {"tables": ["final_answer"], "overrides": []},
    "paper_ablation": {"tables": ["clustering_ablation"],
                       "overrides": ["llm.backend=openai", "llm.concurrency=64", "concurrency.streams=10",
                                     "concurrency.questions=8"]},
}
MODEL = "Qwen/Qwen3-0.6B"


def sweep_command(preset: str, url: str, root: Path, smoke: bool, jobs: int | None) -> list[str]:
    experiment = f"+experiment=[{preset},smoke]" if smoke else f"+experiment={preset}"
    command = [sys.executable, "-m", "eval", "run", "-m", experiment, f"llm.base_url={url}",
               f"llm.model={MODEL}", f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snapshots'}",
               f"llm.cache_path={root / 'llm.sqlite'}", "progress=false", f"hydra.sweep.dir={root / 'sweep'}",
               *PRESETS[preset]["overrides"]]
    if jobs is not None and preset == "paper_main_server":
        command.append(f"hydra.launcher.n_jobs={jobs}")
    return command


def run_records(runs: Path) -> list[dict[str, Any]]:
    """Each run's method, data, state, CPU seconds, memories and questions (from its own files)."""
    records = []
    for status_path in sorted(runs.glob("*/*/*/*/status.json")):
        run = status_path.parent
        status = json.loads(status_path.read_text())
        stats_path, predictions = run / "memory_stats.json", run / "predictions.jsonl"
        stats = json.loads(stats_path.read_text()) if stats_path.is_file() else []
        questions = sum(1 for line in predictions.open() if line.strip()) if predictions.is_file() else 0
        memories = sum(int(s.get("turns", 0)) for s in stats)
        cpu = status.get("cpu_s")
        records.append({
            "run": str(run.relative_to(runs)), "state": status.get("state"), "error": status.get("error"),
            "method": run.parts[-3].split("@")[0], "data": run.parts[-4], "streams": len(stats),
            "memories": memories, "questions": questions, "cpu_s": cpu,
            "peak_rss_mib": status.get("peak_rss_mib"),
            "ingest_s": round(sum(float(s.get("ingest_seconds", 0)) for s in stats), 2),
            "cpu_ms_per_memory_and_question": (round(1000 * cpu / max(1, memories + questions), 2)
                                               if cpu else None)})
    return records


def filled_cells(tables: Path, names: list[str]) -> dict[str, Any]:
    """Reproduced cells with a value, of every reproduced cell, in each named paper table."""
    found: dict[str, Any] = {}
    for name in names:
        for path in sorted(tables.rglob(f"{name}*.csv")):
            rows = list(csv.DictReader(path.open()))
            filled = sum(1 for r in rows if (r.get("Reproduced") or "").strip())
            found[str(path.relative_to(tables))] = {"filled": filled, "cells": len(rows)}
    return found


def bench_preset(preset: str, smoke: bool, jobs: int | None, capacity: float) -> dict[str, Any]:
    server = StandInServer(MODEL)
    with TemporaryDirectory() as tmp:
        root = Path(tmp)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(sweep_command(preset, server.url, root, smoke, jobs), cwd=ROOT,
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        stats = server.stats()
        server.close()
        records = run_records(root / "runs")
        tables = subprocess.run([sys.executable, "-m", "eval", "tables", "--runs", str(root / "runs"),
                                 "--out", str(root / "tables"), "--no-plots"], cwd=ROOT, capture_output=True,
                                text=True)
        cells = filled_cells(root / "tables", PRESETS[preset]["tables"])
    memories = sum(r["memories"] for r in records)
    questions = sum(r["questions"] for r in records)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "preset": preset, "smoke": smoke, "exit_code": proc.returncode,
        "stderr_tail": proc.stderr[-1500:] if proc.returncode else "",
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "peak_rss_mib": round(after.ru_maxrss / 1024, 1),
        "runs": len(records), "complete": sum(r["state"] == "complete" for r in records),
        "memories": memories, "questions": questions,
        "cpu_ms_per_memory": round(1000 * cpu / max(1, memories), 2),
        "requests": stats["requests"], "peak_in_flight": stats["peak_in_flight"],
        "standin_busy_share": round(stats["busy_s"] / wall, 3),
        "requests_per_s": round(stats["requests"] / wall, 1),
        "standin_capacity_requests_per_s": round(capacity, 1),
        "share_of_standin_capacity": round(stats["requests"] / wall / capacity, 4),
        "tables_exit_code": tables.returncode, "paper_cells": cells,
        "every_cell_filled": bool(cells) and all(c["filled"] == c["cells"] for c in cells.values()),
        "per_run": records,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", action="append", choices=sorted(PRESETS),
                        help="preset(s) to sweep (default: both)")
    parser.add_argument("--smoke", action="store_true", help="the smoke subset: a check in minutes")
    parser.add_argument("--jobs", type=int, default=None,
                        help="paper_main_server's parallel jobs (default: its 4)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    probe = StandInServer(MODEL)
    capacity = measure_capacity(probe.url, MODEL)
    probe.close()
    results = [bench_preset(p, args.smoke, args.jobs, capacity) for p in (args.experiment or list(PRESETS))]
    for r in results:
        cells = ", ".join(f"{k} {v['filled']}/{v['cells']}" for k, v in r["paper_cells"].items())
        label = r["preset"] + (" (smoke)" if r["smoke"] else "")
        print(f"{label}: exit {r['exit_code']}, {r['complete']}/{r['runs']} runs complete, "
              f"{r['memories']:,} memories, {r['questions']:,} questions in {r['wall_s']:.0f} s; "
              f"CPU {r['cpu_s']:.0f} s ({r['cpu_ms_per_memory']:.1f} ms per memory), peak RSS "
              f"{r['peak_rss_mib']:.0f} MiB; {r['requests']:,} requests, "
              f"at most {r['peak_in_flight']} in flight, "
              f"{r['share_of_standin_capacity']:.1%} of the stand-in's capacity ({capacity:.0f} requests/s); "
              f"paper cells: {cells or 'none'}")
        if r["exit_code"]:
            print(r["stderr_tail"])
    name = "sweep_smoke" if args.smoke else "sweep"
    path = write_result(name, {"standin_capacity_requests_per_s": capacity, "presets": results}, args.out)
    print(f"wrote {path}")
    return 0 if all(r["exit_code"] == 0 and r["every_cell_filled"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
