"""How often a model loops to the token cap in note analysis, by schema and whitespace cap.

    python scripts/bench_schema_loops.py                          # 8 BioASQ passages, 0.5B
    python scripts/bench_schema_loops.py --turns 16 --stream 0

The reference prompt set's note-analysis prompt on the first ``--turns`` passages of one BioASQ
stream, sampled at 0.7 (the reference's temperature) with fixed seeds, under three settings: the
reference profile's open schema with unbounded grammar whitespace, the open schema with a
whitespace cap of 16, and the robust profile's bounded schema (cap 16). Counts the calls that
ran to ``--max-tokens``. Writes results/bench/schema_loops.json.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.bench_common import write_result  # noqa: E402

SETTINGS = (("open schema, unbounded whitespace", None, False), ("open schema, whitespace ≤ 16", 16, False),
            ("bounded schema, whitespace ≤ 16", 16, True))


def main() -> int:
    from clag.llm.llama_server import stop_all
    from clag.llm.models import build_backend
    from clag.llm.types import Request
    from clag.prompts import analysis_schema
    from eval.cli import compose
    from eval.data import load_dataset
    from eval.prompt_source import build_prompt_set

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default="qwen2.5-coder-0.5b")
    parser.add_argument("--stream", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args()
    cfg = compose(["data=bioasq", "profile=reference", f"llm={ns.llm}", "llm.cache_path=null"])
    prompts = build_prompt_set(cfg["profile"], cfg["data"])
    turns = load_dataset(cfg["data"]).samples[ns.stream].turns[:ns.turns]
    results: list[dict[str, Any]] = []
    for label, whitespace, bounded in SETTINGS:
        backend = build_backend({**cfg["llm"], "max_whitespace": whitespace})
        outputs = backend.generate([
            Request(prompt=prompts.analysis(t.text), json_schema=analysis_schema(bounded),
                    max_tokens=ns.max_tokens, temperature=0.7, seed=i, tag="note")
            for i, t in enumerate(turns)])
        stop_all()        # the next setting is another backend identity: a fresh server
        errors = sum(o.finish_reason == "error" for o in outputs)
        capped = sum(o.completion_tokens >= ns.max_tokens for o in outputs)
        tokens = [o.completion_tokens for o in outputs]
        results.append({"setting": label, "max_whitespace": whitespace, "bounded": bounded,
                        "calls": len(outputs), "hit_cap": capped, "errors": errors, "tokens": tokens})
        print(f"{label:<36} {capped}/{len(outputs)} hit {ns.max_tokens} tokens ({errors} errors); "
              f"tokens {tokens}", flush=True)
    path = write_result("schema_loops", {"config": {k: v for k, v in vars(ns).items() if k != "out"},
                                         "results": results}, ns.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
