"""CLAG ingest throughput: llama.cpp one call at a time (in process) vs llama.cpp's server with
continuous batching over parallel slots, on the same cores and the same model.

    python scripts/bench_llama_server.py                         # 10 BioASQ streams × 12 turns, 0.5B
    python scripts/bench_llama_server.py --turns 6 --slots 4     # shorter

Both paths ingest the same streams with the same CLAG config (clustering starts at
``--cluster-start`` notes so routing calls happen inside the short streams), with no request
cache, every call greedy (``llm.greedy=true``) so the two paths' outputs can be compared call by
call. The in-process path runs the streams one after another (it serves one sequence at a
time); the server path ingests all streams at once in threads, each sending its calls to the
shared server. Reports memories per second, the speed-up, LLM calls, and how many greedy outputs
differ between the paths (batched decoding changes float summation order, so some may).
Writes results/bench/llama_server.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.bench_common import write_result  # noqa: E402


class Recorder:
    """Wraps a backend; keeps every (prompt, schema) → output, to compare two paths' outputs."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.model_id = backend.model_id
        self.outputs: dict[str, str] = {}
        self._lock = threading.Lock()

    def generate(self, requests: list[Any]) -> list[Any]:
        completions = self.backend.generate(requests)
        with self._lock:
            for request, completion in zip(requests, completions):
                key = f"{request.tag}|{request.prompt}|{request.messages}|{request.json_schema}"
                self.outputs[key] = completion.text
        return completions


def ingest(overrides: list[str], streams_at_once: int) -> dict[str, Any]:
    from eval.cli import compose
    from eval.data import load_dataset
    from eval.methods import build_standard
    from eval.runner import prepare_memory

    cfg = compose(overrides)
    dataset = load_dataset(cfg["data"])
    method = build_standard(cfg)
    client = method.make_memory(None).llm          # one client per run, shared by every memory
    recorder = Recorder(client.backend)
    client.backend = recorder
    memories = sum(len(s.turns) for s in dataset.samples)
    started = time.perf_counter()

    def one(sample: Any) -> None:
        prepare_memory(sample, method, None, False)

    with ThreadPoolExecutor(max_workers=streams_at_once) as pool:
        list(pool.map(one, dataset.samples))
    elapsed = time.perf_counter() - started
    ledger = method.ledger()
    total = ledger.get("total", {})
    return {"memories": memories, "seconds": round(elapsed, 1),
            "memories_per_s": round(memories / elapsed, 4), "calls": total.get("calls"),
            "prompt_tokens": total.get("prompt_tokens"), "completion_tokens": total.get("completion_tokens"),
            "parse_failures": total.get("parse_failures"),
            # the server's flags after --model/--host/--port (no paths of the measuring machine)
            "server_args": [a for s in ledger.get("servers") or [] for a in s["command"][6:]],
            "_outputs": recorder.outputs}


def batch_invariance(llm: str, prompts: int, slots: int) -> dict[str, Any]:
    """The same greedy note-analysis prompts (BioASQ passages) through 1 slot and through
    ``slots`` slots at once: how many outputs batching alone changes (same engine, same model)."""
    from clag.llm.llama_server import stop_all
    from clag.llm.models import build_backend
    from clag.llm.types import Request
    from clag.prompts import analysis_schema
    from eval.cli import compose
    from eval.data import load_dataset

    cfg = compose(["data=bioasq", f"llm={llm}", "llm.cache_path=null", "llm.server=auto"])
    turns = [t for s in load_dataset(cfg["data"]).samples for t in s.turns][:prompts]
    requests = [Request(prompt=f"Extract keywords and a one-sentence context from this passage as JSON.\n"
                               f"{t.text}\nJSON:", max_tokens=160, temperature=0.0,
                        json_schema=analysis_schema(True), tag="note") for t in turns]
    texts = {}
    for n in (1, slots):
        backend = build_backend({**cfg["llm"], "server_slots": n})
        texts[n] = [c.text for c in backend.generate(requests)]
        stop_all()
    differ = sum(a != b for a, b in zip(texts[1], texts[slots]))
    print(f"batch invariance: {differ} of {len(requests)} greedy outputs differ between 1 slot and {slots}")
    return {"prompts": len(requests), "slots": slots, "outputs_differing": differ}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default="qwen2.5-coder-0.5b")
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--turns", type=int, default=12, help="turns per stream")
    parser.add_argument("--slots", type=int, default=10, help="server slots")
    parser.add_argument("--cluster-start", type=int, default=6)
    parser.add_argument("--modes", default="inprocess,server,invariance")
    parser.add_argument("--inprocess-streams", type=int, default=None,
                        help="the one-at-a-time path on only the first N streams (its rate per memory "
                             "does not depend on how many streams there are; saves hours)")
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args()
    base = ["method=clag", "data=bioasq", f"llm={ns.llm}", "llm.cache_path=null", "llm.greedy=true",
            f"data.subset.samples={ns.streams}", f"data.subset.turns={ns.turns}",
            f"method.memory.init_cluster_min_memories={ns.cluster_start}", "progress=false"]
    results: dict[str, Any] = {}
    outputs: dict[str, dict[str, str]] = {}
    for mode in ns.modes.split(","):
        if mode == "invariance":
            results["batch_invariance"] = batch_invariance(ns.llm, 16, 8)
            continue
        if mode == "inprocess":
            overrides, at_once = [*base, "llm.server=null"], 1
            if ns.inprocess_streams:
                overrides.append(f"data.subset.samples={ns.inprocess_streams}")
        else:
            overrides, at_once = [*base, "llm.server=auto", f"llm.server_slots={ns.slots}",
                                  f"concurrency.streams={ns.streams}"], ns.streams
        streams = (ns.inprocess_streams or ns.streams) if mode == "inprocess" else ns.streams
        print(f"{mode}: ingesting {streams} streams × {ns.turns} turns …", flush=True)
        result = {"streams": streams, **ingest(overrides, at_once)}
        outputs[mode] = result.pop("_outputs")
        results[mode] = result
        print(f"  {result['memories']} memories in {result['seconds']} s = {result['memories_per_s']} "
              f"memories/s, {result['calls']} calls", flush=True)
    if {"inprocess", "server"} <= results.keys():
        a, b = outputs["inprocess"], outputs["server"]
        common = a.keys() & b.keys()
        differ = sum(a[k] != b[k] for k in common)
        speedup = results["server"]["memories_per_s"] / results["inprocess"]["memories_per_s"]
        results["speedup"] = round(speedup, 2)
        results["outputs_compared"] = len(common)
        results["outputs_differing"] = differ
        results["calls_only_in_one_path"] = len(a.keys() ^ b.keys())
        print(f"speed-up {results['speedup']}×; greedy outputs: {differ} of {len(common)} identical "
              f"prompts differ; {results['calls_only_in_one_path']} prompts asked by one path only")
    results["goal"] = "server ≥ 3× the in-process memories per second"
    path = write_result("llama_server", {"config": vars(ns) | {"out": None}, **results}, ns.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
