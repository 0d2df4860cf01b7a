"""Ingest cost per memory as the memory grows: CLAG vs A-mem, up to 5,000 notes.

    python scripts/bench_ingest.py                      # 5,000 LoCoMo turns, windows of 500
    python scripts/bench_ingest.py --notes 1000 --window 100 --methods clag

The LLM is a fixed-reply stand-in (this benchmark measures how the *prompts* and the memory
work grow, not what a model answers), counted with SmolLM2's real tokenizer: every call's prompt
is tokenised, so "prompt tokens per memory" is what a real backend would be sent. Turns are the
real LoCoMo conversations, one after another, as one stream. Per window of notes it reports LLM
calls and prompt tokens per memory, texts embedded per memory and wall seconds per memory —
the embedding and index work is where A-mem's global consolidation (every 100 evolutions, all
notes) grows with N and CLAG's localized evolution does not. Writes results/bench/ingest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from clag.llm.types import Completion, Request  # noqa: E402
from scripts.bench_common import write_result  # noqa: E402

_TOKENIZER: Any = None


def tokenizer() -> Any:
    global _TOKENIZER
    if _TOKENIZER is None:
        from transformers import AutoTokenizer

        from clag.llm.hf import convert_gguf
        from clag.llm.models import packaged_model_path

        _TOKENIZER = AutoTokenizer.from_pretrained(convert_gguf(packaged_model_path("smollm2-135m")))
    return _TOKENIZER


def _words(text: str, n: int) -> list[str]:
    return [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4][:n]


def fixed_reply(request: Request) -> str:
    """A plausible, fixed-shape reply per call: notes get keywords from their text, evolution
    links the first neighbour, routing picks the first candidate, selection the first cluster."""
    prompt = request.prompt or ""
    if request.tag == "note":
        words = _words(prompt.rsplit("Content for analysis:\n", 1)[-1], 4)
        return json.dumps({"keywords": words, "context": "A remark in a conversation.", "tags": words[:2]})
    if request.tag == "evolve":
        ids = [int(i) for i in re.findall(r"memory index:(\d+)", prompt)][:1]
        return json.dumps({"should_evolve": bool(ids), "actions": ["strengthen"] if ids else [],
                           "suggested_connections": ids, "tags_to_update": ["chat"],
                           "new_context_neighborhood": [], "new_tags_neighborhood": []})
    if request.tag == "route":
        ids = re.findall(r"- cluster_id: (\S+)", prompt)
        return json.dumps({"choice": ids[0] if ids else "new"})
    if request.tag == "profile":
        return json.dumps({"summary": "Conversation topics.", "tags": _words(prompt, 3) or ["chat"]})
    return json.dumps({"answer": "ok"})


class FixedBackend:
    """``llm.backend=scripts.bench_ingest:build``: fixed replies, real token counts, no model."""

    model_id = "bench-fixed-replies"

    def generate(self, requests: list[Request]) -> list[Completion]:
        tok = tokenizer()
        out = []
        for r in requests:
            text = fixed_reply(r)
            prompt = r.prompt if r.prompt is not None else "\n".join(c for _, c in r.messages or ())
            out.append(Completion(text, prompt_tokens=len(tok(prompt)["input_ids"]),
                                  completion_tokens=len(tok(text)["input_ids"]), latency_s=0.0))
        return out


def build(cfg: dict) -> FixedBackend:
    return FixedBackend()


def stream_turns(n: int):
    from eval.data import load_dataset

    dataset = load_dataset({"name": "locomo"})
    turns = [t for sample in dataset.samples for t in sample.turns]
    if len(turns) < n:
        raise SystemExit(f"LoCoMo has {len(turns)} turns; ask for at most that many notes")
    return turns[:n]


def method_memory(method: str):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from eval.methods import build_method

    with initialize_config_dir(str(Path(__file__).resolve().parent.parent / "configs"), version_base=None):
        cfg = compose("config", overrides=[f"method={method}", "llm.backend=scripts.bench_ingest:build",
                                           "llm.cache_path=null", "batching.prefetch_ingest=false"])
    return build_method(OmegaConf.to_container(cfg, resolve=True))


def measure(method: str, turns, window: int) -> list[dict[str, Any]]:
    from clag.types import Sample

    run = method_memory(method)
    memory = run.make_memory(Sample("bench", tuple(turns), ()))
    encoded = {"texts": 0}
    model = memory.embedder._model
    original = model.encode

    def counting_encode(texts, *args, **kwargs):
        encoded["texts"] += len(texts)
        return original(texts, *args, **kwargs)

    model.encode = counting_encode
    rows = []
    previous = {"calls": 0, "prompt_tokens": 0}
    previous_texts = 0
    with run.scope("ingest:bench"):
        for start in range(0, len(turns), window):
            chunk = turns[start:start + window]
            t0 = time.perf_counter()
            for turn in chunk:
                memory.ingest(turn)
            if start + window >= len(turns):
                memory.finalize()
            seconds = time.perf_counter() - t0
            total = run.ledger()["total"]
            n = len(chunk)
            rows.append({
                "method": method, "notes": start + n,
                "calls_per_memory": round((total["calls"] - previous["calls"]) / n, 3),
                "prompt_tokens_per_memory": round((total["prompt_tokens"] - previous["prompt_tokens"]) / n,
                                                  1),
                "texts_embedded_per_memory": round((encoded["texts"] - previous_texts) / n, 2),
                "ms_per_memory": round(1000 * seconds / n, 2),
            })
            previous = {"calls": total["calls"], "prompt_tokens": total["prompt_tokens"]}
            previous_texts = encoded["texts"]
            print(json.dumps(rows[-1]), flush=True)
    by_tag = run.ledger()["by_tag"]
    rows[-1]["calls_by_tag"] = {tag: counts["calls"] for tag, counts in by_tag.items()}
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--methods", nargs="+", default=["amem", "clag"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    turns = stream_turns(args.notes)
    rows = [row for method in args.methods for row in measure(method, turns, args.window)]
    path = write_result("ingest", {"llm": "fixed replies; prompt tokens counted with SmolLM2's tokenizer",
                                   "stream": f"the first {args.notes} LoCoMo turns as one stream",
                                   "window": args.window, "results": rows}, args.out)
    print(f"{'method':>6} {'notes':>6} {'calls/mem':>9} {'prompt tok/mem':>14} {'embeds/mem':>10} "
          f"{'ms/mem':>8}")
    for r in rows:
        print(f"{r['method']:>6} {r['notes']:>6} {r['calls_per_memory']:>9.2f} "
              f"{r['prompt_tokens_per_memory']:>14.1f} {r['texts_embedded_per_memory']:>10.2f} "
              f"{r['ms_per_memory']:>8.1f}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
