"""Wall time and scores of every method's smoke run (``+experiment=smoke``), each from a fresh
request cache, one after another, as a user would run them.

    python scripts/bench_smoke.py                                   # every method, every dataset
    python scripts/bench_smoke.py --methods rag,clag --data bioasq

Writes results/bench/smoke.json: per dataset and method, the stream the smoke picked, seconds,
LLM calls, F1, BLEU-1 and R@10.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.bench_common import ROOT, write_result  # noqa: E402

METHODS = "rag,amem,gam,memoryos,clag,clag_kmeans,clag_cosine,clag_plus"
DATASETS = "locomo,bioasq,hotpotqa"


def smoke(method: str, data: str, extra: list[str], root: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "eval", "run", f"method={method}", f"data={data}", "+experiment=smoke",
               f"results_root={root / 'runs'}", f"llm.cache_path={root / method / 'llm.sqlite'}",
               "snapshot_dir=null", "progress=false", *extra]
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        return {"seconds": round(seconds, 1), "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    run_dir = Path(proc.stdout.strip().splitlines()[-1].split("run directory: ", 1)[1])
    metrics = json.loads((run_dir / "metrics.json").read_text())["overall"]
    ledger = json.loads((run_dir / "ledger.json").read_text())["total"]
    env = json.loads((run_dir / "env.json").read_text())["data"]
    return {"seconds": round(seconds, 1), "streams": env.get("sample_ids"),
            "turns": env["turns"], "questions": env["questions"],
            "calls": ledger.get("calls"), "parse_failures": ledger.get("parse_failures"),
            **{k: metrics.get(k) for k in ("f1", "bleu1", "recall@10")}, "health": _health(run_dir)}


def _health(run_dir: Path) -> dict[str, Any]:
    report = json.loads((run_dir / "health.json").read_text())
    overall = report["overall"]
    return {"healthy": report["healthy"], "flags": report["flags"], "capped": overall["capped"],
            "unparsable": overall["unparsable"], "placeholder_copies": overall.get("placeholder_copies")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--data", default=DATASETS)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="keep the run directories here (default: thrown away)")
    parser.add_argument("extra", nargs="*", help="more overrides, e.g. llm=smollm2-135m")
    ns = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="clag-smoke-") as tmp:
        for data in ns.data.split(","):
            for method in ns.methods.split(","):
                row = smoke(method, data, ns.extra, (ns.keep or Path(tmp)) / data)
                results.setdefault(data, {})[method] = row
                print(f"{data:<9} {method:<12} {json.dumps(row)}", flush=True)
                # written after every run: a long benchmark interrupted keeps what it measured
                path = write_result("smoke", {"overrides": ns.extra, "results": results,
                                              "goal": "each method ≤ 300 s, ≥ 1 question answered"},
                                    ns.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
