"""The paper presets at full scale against the stand-in server: does a whole sweep finish, fill
every reproduced cell, and keep the harness from being the bottleneck?

    python scripts/bench_sweep.py                          # paper_main_server, then paper_ablation
    python scripts/bench_sweep.py --smoke                  # the same on the smoke subset (minutes)
    python scripts/bench_sweep.py --experiment paper_main_server --jobs 4
    python scripts/bench_sweep.py --workdir sweep-work --budget-min 90   # in pieces: run again to go on

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

Writes results/bench/sweep.json (``--out`` elsewhere) once every preset has finished. CPU-heavy:
run it alone. With ``--workdir`` it can run in pieces: a piece stopped by ``--budget-min`` keeps
its finished runs and the next start goes on from them (exit code 3 until the sweep is done).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any
from urllib.parse import urlsplit

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


def sweep_command(preset: str, url: str, root: Path, smoke: bool, jobs: int | None,
                  sweep_dir: Path | None = None) -> list[str]:
    experiment = f"+experiment=[{preset},smoke]" if smoke else f"+experiment={preset}"
    command = [sys.executable, "-m", "eval", "run", "-m", experiment, f"llm.base_url={url}",
               f"llm.model={MODEL}", f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snapshots'}",
               f"llm.cache_path={root / 'llm.sqlite'}", "progress=false",
               f"hydra.sweep.dir={sweep_dir or root / 'sweep'}", "skip_complete=true",
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
            "cpu_whole": status.get("cpu_whole"), "peak_rss_mib": status.get("peak_rss_mib"),
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


def stop_sweep(proc: subprocess.Popen) -> None:
    """Ctrl-C to the whole sweep (its launcher and jobs): each run records what finished and its CPU
    so far, and resumes on the next piece; whatever is still alive two minutes later is killed."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def standin_for(root: Path) -> StandInServer:
    """The stand-in on the port the sweep's first piece used: the server's URL is part of each
    run's config, so another port would make every run a new config and nothing would resume."""
    port_file = root / "standin_port"
    if not port_file.is_file():
        server = StandInServer(MODEL)
        port_file.write_text(str(urlsplit(server.url).port))
        return server
    port = int(port_file.read_text())
    try:
        return StandInServer(MODEL, port=port)
    except OSError as exc:
        raise SystemExit(f"the stand-in cannot take port {port} again ({exc}), and the sweep's runs "
                         f"name that port in their configs; free it and start again") from None


def run_piece(preset: str, root: Path, smoke: bool, jobs: int | None,
              budget_s: float | None) -> dict[str, Any]:
    """One start of the sweep (the first, or one that goes on after a stop): until it ends or its
    time budget is spent. Runs that completed in an earlier piece are skipped (``skip_complete``)."""
    pieces = root / "pieces.jsonl"
    number = sum(1 for _ in pieces.open()) if pieces.is_file() else 0
    server = standin_for(root)
    log = root / f"piece-{number}.log"
    command = sweep_command(preset, server.url, root, smoke, jobs, sweep_dir=root / f"sweep-{number}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            code, stopped = proc.wait(timeout=budget_s), False
        except subprocess.TimeoutExpired:
            stop_sweep(proc)
            code, stopped = proc.returncode, True
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = server.stats()
    server.close()
    piece = {"piece": number, "stopped": stopped, "exit_code": code, "wall_s": round(wall, 1),
             "cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1),
             "peak_rss_mib": round(after.ru_maxrss / 1024, 1), "requests": stats["requests"],
             "peak_in_flight": stats["peak_in_flight"], "standin_busy_s": round(stats["busy_s"], 1),
             "log_tail": "" if code == 0 else log.read_text(errors="replace")[-1500:]}
    with pieces.open("a") as handle:
        handle.write(json.dumps(piece) + "\n")
    return piece


def bench_preset(preset: str, root: Path, smoke: bool, jobs: int | None, capacity: float,
                 budget_s: float | None) -> dict[str, Any] | None:
    """The preset's figures over every piece of its sweep, or None when this piece was stopped by
    its time budget (the work directory keeps what finished)."""
    root.mkdir(parents=True, exist_ok=True)
    done = root / "result.json"
    if done.is_file():                                     # finished in an earlier start
        return json.loads(done.read_text())
    last = run_piece(preset, root, smoke, jobs, budget_s)
    if last["stopped"]:
        return None
    pieces = [json.loads(line) for line in (root / "pieces.jsonl").read_text().splitlines()]
    records = run_records(root / "runs")
    tables = subprocess.run([sys.executable, "-m", "eval", "tables", "--runs", str(root / "runs"),
                             "--out", str(root / "tables"), "--no-plots"], cwd=ROOT, capture_output=True,
                            text=True)
    cells = filled_cells(root / "tables", PRESETS[preset]["tables"])
    memories = sum(r["memories"] for r in records)
    questions = sum(r["questions"] for r in records)
    wall = sum(p["wall_s"] for p in pieces)
    cpu = sum(p["cpu_s"] for p in pieces)
    requests = sum(p["requests"] for p in pieces)
    result = {
        "preset": preset, "smoke": smoke, "exit_code": last["exit_code"], "stderr_tail": last["log_tail"],
        "pieces": len(pieces), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "peak_rss_mib": max(p["peak_rss_mib"] for p in pieces),
        "runs": len(records), "complete": sum(r["state"] == "complete" for r in records),
        "memories": memories, "questions": questions,
        "cpu_ms_per_memory": round(1000 * cpu / max(1, memories), 2),
        "requests": requests, "peak_in_flight": max(p["peak_in_flight"] for p in pieces),
        "standin_busy_share": round(sum(p["standin_busy_s"] for p in pieces) / wall, 3),
        "requests_per_s": round(requests / wall, 1),
        "standin_capacity_requests_per_s": round(capacity, 1),
        "share_of_standin_capacity": round(requests / wall / capacity, 4),
        "tables_exit_code": tables.returncode, "paper_cells": cells,
        "every_cell_filled": bool(cells) and all(c["filled"] == c["cells"] for c in cells.values()),
        "per_piece": pieces, "per_run": records,
    }
    done.write_text(json.dumps(result, indent=2))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", action="append", choices=sorted(PRESETS),
                        help="preset(s) to sweep (default: both)")
    parser.add_argument("--smoke", action="store_true", help="the smoke subset: a check in minutes")
    parser.add_argument("--jobs", type=int, default=None,
                        help="paper_main_server's parallel jobs (default: its 4)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the sweep's runs here, so that a stopped sweep goes on where it "
                             "stopped when started again with the same directory (default: a temporary one)")
    parser.add_argument("--budget-min", type=float, default=None,
                        help="stop after this many minutes (needs --workdir); start again to go on")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.budget_min is not None and args.workdir is None:
        parser.error("--budget-min needs --workdir: a stopped sweep goes on from its work directory")
    probe = StandInServer(MODEL)
    capacity = measure_capacity(probe.url, MODEL)
    probe.close()
    with TemporaryDirectory() as tmp:
        workdir = (args.workdir or Path(tmp)).resolve()
        deadline = None if args.budget_min is None else time.monotonic() + 60 * args.budget_min
        results = []
        for preset in args.experiment or list(PRESETS):
            budget = None if deadline is None else max(1.0, deadline - time.monotonic())
            result = bench_preset(preset, workdir / ("smoke" if args.smoke else "full") / preset, args.smoke,
                                  args.jobs, capacity, budget)
            if result is None:
                print(f"{preset}: stopped after the time budget ({args.budget_min:g} min); its finished runs "
                      f"are kept in {workdir}: run the same command again to go on")
                return 3
            results.append(result)
    for r in results:
        cells = ", ".join(f"{k} {v['filled']}/{v['cells']}" for k, v in r["paper_cells"].items())
        label = r["preset"] + (" (smoke)" if r["smoke"] else "")
        print(f"{label}: exit {r['exit_code']}, {r['complete']}/{r['runs']} runs complete, "
              f"{r['memories']:,} memories, {r['questions']:,} questions in {r['wall_s']:.0f} s "
              f"({r['pieces']} piece(s)); "
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
