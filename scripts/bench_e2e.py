"""End-to-end smoke: one-at-a-time vs batched vs batched + concurrent, same calls; harness overhead.

    python scripts/bench_e2e.py                                   # A-mem, 2 LoCoMo streams, SmolLM2 (hf)
    python scripts/bench_e2e.py --method clag --llm-backend llamacpp

Each mode runs the same subset with the LLM cache off, in one process (the model is loaded once,
before timing). Modes:
  sequential   every call alone, streams and questions one by one (the reference scripts' way)
  batched      note analysis of a stream prefetched as batches; a stream's questions run at once,
               so each question-time stage reaches the backend as one micro-batch
  concurrent   batched, and the streams run at once as well
Reported per mode: wall seconds, LLM calls, summed LLM seconds (what the backend reported), and
the harness overhead = (wall − LLM seconds) / wall. Also checks that every mode produced the same
number of calls. Writes results/bench/e2e.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.bench_common import write_result  # noqa: E402

MODES = {
    "sequential": ["batching.prefetch_ingest=false", "concurrency.streams=1", "concurrency.questions=1"],
    "batched": ["batching.prefetch_ingest=true", "concurrency.streams=1", "concurrency.questions=8"],
    "concurrent": ["batching.prefetch_ingest=true", "concurrency.streams=3", "concurrency.questions=8"],
}


def compose(overrides: list[str]) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(str(ROOT / "configs"), version_base=None):
        return OmegaConf.to_container(hydra_compose("config", overrides=overrides), resolve=True)


def run_mode(name: str, base: list[str]) -> dict:
    from clag.llm.models import build_backend
    from eval.data import load_dataset
    from eval.methods import build_method
    from eval.runner import run_dataset

    cfg = compose([*base, *MODES[name]])
    dataset = load_dataset(cfg["data"])
    build_backend(cfg["llm"])                       # loaded once per process, outside the timing
    method = build_method(cfg)
    concurrency = cfg["concurrency"]
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        metrics = run_dataset(dataset, method, Path(tmp), progress=False,
                              streams=int(concurrency["streams"]), questions=int(concurrency["questions"]))
        wall = time.perf_counter() - started
    ledger = method.ledger()
    llm_s = float(ledger["total"]["latency_s"])
    row = {"mode": name, "wall_s": round(wall, 2), "llm_calls": int(ledger["total"]["calls"]),
           "llm_seconds": round(llm_s, 2), "harness_overhead": round(max(0.0, wall - llm_s) / wall, 4),
           "questions": metrics.get("questions"),
           "backend_batches": ledger.get("micro_batches")}
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="amem")
    parser.add_argument("--data", default="locomo")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--llm-backend", default="hf")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--memory-max-tokens", type=int, default=64)
    parser.add_argument("--answer-max-tokens", type=int, default=32)
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    base = [f"method={args.method}", f"data={args.data}", f"data.subset.samples={args.samples}",
            f"data.subset.turns={args.turns}", f"data.subset.questions_per_sample={args.questions}",
            f"llm.backend={args.llm_backend}", f"llm.batch_size={args.batch_size}",
            "llm.cache_path=null",
            f"method.memory.max_tokens={args.memory_max_tokens}",
            f"answer.max_tokens={args.answer_max_tokens}"]
    rows = [run_mode(mode, base) for mode in args.modes]
    if len({r["llm_calls"] for r in rows}) != 1:
        print("warning: the modes made different numbers of calls", file=sys.stderr)
    sequential = next((r for r in rows if r["mode"] == "sequential"), None)
    for r in rows:
        r["speedup_vs_sequential"] = round(sequential["wall_s"] / r["wall_s"], 2) if sequential else None
    path = write_result("e2e", {"settings": base, "results": rows}, args.out)
    print(f"{'mode':>11} {'wall s':>8} {'calls':>6} {'LLM s':>8} {'overhead':>9} {'speedup':>8}")
    for r in rows:
        print(f"{r['mode']:>11} {r['wall_s']:>8.1f} {r['llm_calls']:>6} {r['llm_seconds']:>8.1f} "
              f"{100 * r['harness_overhead']:>8.1f}% {r['speedup_vs_sequential'] or 0:>7.2f}x")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
