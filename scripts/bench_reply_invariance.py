"""Does an in-process reply depend on anything besides its request: the calls before it, or the
size of the context the model was loaded with?

llama-cpp-python keeps the previous call's KV cache and reuses its longest common prefix with the
next prompt (``Llama.generate``); the cells a prompt lands in, and so the order attention sums
over them, depend on what the cache held. This check decodes the same requests — note analyses
under the BioASQ power runs' decoding (``decoding=llama-cpp-python``, the note schema's grammar,
a seed per request, sampled at the reference's 0.7; greedy; and sampled without the grammar) —
through the harness's ``llamacpp`` backend:

- in a fresh context (the model just loaded, its cache cleared);
- after another note analysis (a predecessor sharing the prompt's template);
- after an unrelated short request (a predecessor sharing almost nothing);
- after a longer history (another note analysis, the target itself, the unrelated request), as
  a run's calls follow one another;
- after that history, with the KV cache cleared before the target.

Each reply is compared with the fresh one (equal, or the character where it first differs).
Then the same requests in fresh contexts of other sizes (``llm.max_context``; the backend's
default was 8,192 tokens before it became 16,384), compared with the default's replies. The
request cache's key names the request, the weights and the decoding, not the history or the
context size: where either moves a reply, a cached reply is what its request gave in the run
that made it, and a rerun from an empty cache need not give it back.

    python scripts/bench_reply_invariance.py                 # results/bench/reply_invariance.json
    python scripts/bench_reply_invariance.py --threads 1     # beside another job (counts, not times)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.bench_common import ROOT, write_result  # noqa: E402

MODEL = "qwen2.5-coder-0.5b"
#: sentences of the kind a BioASQ stream holds (written for this check, not taken from the data)
TARGETS = (
    "Ivermectin is a broad-spectrum antiparasitic agent used to treat onchocerciasis and strongyloidiasis.",
    "Heifers raised in a semi-intensive grazing system were treated with anthelmintic drugs of low or high "
    "efficacy.",
    "Brodalumab is a human monoclonal antibody that binds the interleukin-17 receptor A.",
)
NOTE_PREDECESSOR = "Dapagliflozin lowers blood glucose by inhibiting the sodium-glucose cotransporter 2."
UNRELATED = "Name three colours."
INSTRUCTION = ("Generate a structured analysis of the following content by identifying the most salient "
               "keywords, extracting the core context, and creating categorical tags. Answer as JSON with "
               "keywords, context and tags.\n\nContent for analysis: ")


def decoding_policy() -> Any:
    """The power runs' preset, read from its config file (one place says what it is)."""
    from clag.llm.decoding import DecodingPolicy

    fields = yaml.safe_load((ROOT / "configs" / "decoding" / "llama-cpp-python.yaml").read_text())
    fields.pop("name", None)
    return DecodingPolicy(**fields)


#: (temperature, whether the note schema's grammar constrains the reply): the runs' note calls,
#: greedy, and a free-text reply (no grammar to keep a nudged sample on the same path)
MODES = ((0.7, True), (0.0, True), (0.7, False))


def note_request(sentence: str, temperature: float, constrained: bool = True) -> Any:
    from clag.llm.types import Request
    from clag.prompts import analysis_schema

    return Request(messages=(("user", INSTRUCTION + sentence),),
                   json_schema=analysis_schema() if constrained else None, temperature=temperature,
                   seed=42 if temperature > 0 else None, max_tokens=200, tag="note")


def mode_name(temperature: float, constrained: bool) -> str:
    return f"T={temperature}" + ("" if constrained else ", no schema")


def first_difference(a: str, b: str) -> int | None:
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def load(threads: int | None, context: int | None = None) -> Any:
    from clag.llm.llamacpp import LlamaCppBackend
    from clag.llm.models import model_location

    return LlamaCppBackend(model_location({"model": MODEL}), MODEL, max_context=context,
                           threads=threads, policy=decoding_policy())


def tally(cases: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    summary: dict[str, dict[str, int]] = {}
    for case in cases:
        for situation, where in case["first_difference"].items():
            counts = summary.setdefault(f"{situation} ({case['mode']})", {"same": 0, "different": 0})
            counts["same" if where is None else "different"] += 1
    return summary


def history(backend: Any) -> tuple[list[dict[str, Any]], dict[tuple[float, bool, str], str]]:
    """Each target fresh, then after each history; the fresh replies are returned for the next part."""
    from clag.llm.types import Request

    def clear() -> None:
        backend.model.reset()
        backend.model._ctx.kv_cache_clear()     # llama-cpp-python has no public call for this

    def reply(request: Any) -> str:
        return backend.generate([request])[0].text

    unrelated = Request(messages=(("user", UNRELATED),), temperature=0.0, max_tokens=16, tag="untagged")
    cases, fresh_replies = [], {}
    for temperature, constrained in MODES:
        for sentence in TARGETS:
            target = note_request(sentence, temperature, constrained)
            clear()
            fresh = fresh_replies[(temperature, constrained, sentence)] = reply(target)
            outcomes: dict[str, int | None] = {}
            clear()
            reply(note_request(NOTE_PREDECESSOR, temperature, constrained))
            outcomes["after another note analysis"] = first_difference(fresh, reply(target))
            clear()
            reply(unrelated)
            outcomes["after an unrelated request"] = first_difference(fresh, reply(target))
            earlier_calls = [note_request(NOTE_PREDECESSOR, temperature, constrained), target, unrelated]
            clear()
            for earlier in earlier_calls:
                reply(earlier)
            outcomes["after a longer history"] = first_difference(fresh, reply(target))
            clear()
            for earlier in earlier_calls:
                reply(earlier)
            clear()
            outcomes["after a longer history, cache cleared"] = first_difference(fresh, reply(target))
            cases.append({"mode": mode_name(temperature, constrained), "target": sentence[:40],
                          "reply_chars": len(fresh), "first_difference": outcomes})
    return cases, fresh_replies


def context_sizes(threads: int | None, contexts: list[int],
                  fresh: dict[tuple[float, bool, str], str]) -> list[dict]:
    """The targets in a fresh context of each size, against the default context's replies."""
    cases = []
    for context in contexts:
        backend = load(threads, context)
        for (temperature, constrained, sentence), reference in fresh.items():
            text = backend.generate([note_request(sentence, temperature, constrained)])[0].text
            where = first_difference(reference, text)
            cases.append({"mode": mode_name(temperature, constrained), "target": sentence[:40],
                          "context": context, "first_difference": {f"n_ctx {context} vs the default": where}})
        backend.model.close()
    return cases


def run(threads: int | None, contexts: list[int]) -> dict[str, Any]:
    backend = load(threads)
    cases, fresh = history(backend)
    default_context = backend.n_ctx
    backend.model.close()
    sized = context_sizes(threads, contexts, fresh)
    return {"model": MODEL, "threads": threads, "default_context": default_context,
            "history": {"cases": cases, "summary": tally(cases)},
            "context_size": {"cases": sized, "summary": tally(sized)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads (default: the backend's)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--contexts", default="8192", help="other context sizes to compare, comma-separated")
    ns = parser.parse_args()
    result = run(ns.threads, [int(c) for c in ns.contexts.split(",") if c.strip()])
    for part in ("history", "context_size"):
        for situation, counts in result[part]["summary"].items():
            print(f"{situation}: {counts['same']} same as in a fresh default context, "
                  f"{counts['different']} different")
    print(f"wrote {write_result('reply_invariance', result, ns.out)}")


if __name__ == "__main__":
    main()
