"""Benchmark the hf backend: tokens/s with and without the JSON-schema constraint, batch 1 and 4.

    python scripts/bench_llm.py                       # SmolLM2-135M (offline), CPU
    python scripts/bench_llm.py --path /models/qwen --label qwen3-0.6b

Prints a table and writes results/bench/llm.json (machine, model, figures). Each setting runs
the same prompts (note-analysis prompts over LoCoMo-like turns) after one warm-up generation.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from clag.llm.models import build_backend  # noqa: E402
from clag.llm.types import Request  # noqa: E402

TURNS = [
    "Speaker Carolinesays : I went to a LGBTQ support group yesterday and it was so powerful.",
    "Speaker Melaniesays : I painted a lake sunrise last year; it's special to me.",
    "Speaker Carolinesays : I'm keen on counseling or working in mental health.",
    "Speaker Melaniesays : We took the kids camping in the mountains last weekend.",
    "Speaker Johnsays : I just got back from a basketball tournament in Chicago.",
    "Speaker Timsays : I've been reading a fantasy series about dragons and wizards.",
    "Speaker Johnsays : My team won the championship after overtime!",
    "Speaker Timsays : I started learning the violin three months ago.",
]

SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string", "maxLength": 32}, "maxItems": 6},
        "context": {"type": "string", "maxLength": 240},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 32}, "maxItems": 6},
    },
    "required": ["keywords", "context", "tags"],
    "additionalProperties": False,
}


def prompt(turn: str) -> str:
    return ("Analyse the content below and answer in JSON with: keywords (the most important "
            "specific terms), context (one sentence on topic and purpose), tags (broad categories).\n"
            f"Content for analysis: {turn}")


def measure(backend, batch_size: int, constrained: bool, max_tokens: int) -> dict:
    backend.batch_size = batch_size
    requests = [Request(prompt=prompt(t), json_schema=SCHEMA if constrained else None,
                        temperature=0.0, max_tokens=max_tokens, tag="bench") for t in TURNS]
    backend.generate(requests[:1])  # warm-up (grammar compile, caches)
    started = time.perf_counter()
    completions = backend.generate(requests)
    wall = time.perf_counter() - started
    tokens = sum(c.completion_tokens for c in completions)
    valid = sum(1 for c in completions if c.text.strip().startswith("{") and c.finish_reason == "stop")
    return {"batch_size": batch_size, "constrained": constrained, "requests": len(requests),
            "completion_tokens": tokens, "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall, 2),
            "finished_json_objects": valid}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="smollm2-135m")
    parser.add_argument("--model", default="smollm2-135m", help="packaged model name or hub id")
    parser.add_argument("--path", default=None, help="local GGUF file or HF folder")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "llm.json")
    args = parser.parse_args()

    import torch

    cfg = {"name": args.label, "backend": "hf", "model": args.model, "path": args.path,
           "device": args.device, "dtype": "auto", "batch_size": 1}
    started = time.perf_counter()
    backend = build_backend(cfg)
    load_s = time.perf_counter() - started
    rows = [measure(backend, b, c, args.max_tokens) for c in (False, True) for b in (1, 4)]
    result = {
        "benchmark": "hf backend generation throughput",
        "command": " ".join(["python", "scripts/bench_llm.py", *sys.argv[1:]]),
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "platform": platform.platform(), "processor": platform.processor(),
                    "device": getattr(backend, "device", "?"), "torch": torch.__version__},
        "model": {"label": args.label, "model_id": backend.model_id, "load_s": round(load_s, 2)},
        "max_tokens": args.max_tokens,
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"model {backend.model_id} on {result['machine']['device']}, {os.cpu_count()} CPUs, "
          f"load {load_s:.1f}s")
    print(f"{'batch':>5} {'schema':>7} {'tokens':>7} {'wall s':>8} {'tok/s':>8} {'json ok':>8}")
    for r in rows:
        schema = "yes" if r["constrained"] else "no"
        print(f"{r['batch_size']:>5} {schema:>7} {r['completion_tokens']:>7} {r['wall_s']:>8.2f} "
              f"{r['tokens_per_s']:>8.1f} {r['finished_json_objects']:>5}/{r['requests']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
