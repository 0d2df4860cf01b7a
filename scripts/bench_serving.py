"""Serving by simulation: how well the harness keeps a batching server busy, and what
``paper_main`` would cost on one GPU.

    python scripts/bench_serving.py          # CLAG, 10 BioASQ streams x 40 turns, 3 questions each
    python scripts/bench_serving.py --turns 120 --questions 5

A loopback OpenAI-compatible stub stands in for vLLM/SGLang. Its clock follows a batched-decoding
model with continuous batching: every step decodes one token for each active sequence and prefills
the prompts admitted in that step, and takes

    step_s = base_ms + per_seq_ms * active + per_prefill_token_ms * admitted_prompt_tokens   (/1000)

with at most ``max_seqs`` sequences active (defaults below: a 0.6B model on one large GPU, ~5.5 ms
per token at full batch, as vLLM's TPOT for Qwen3-0.6B on an H100). Replies are scripted from the
request's schema (a note, a route, an evolution, a selection, an answer — this measures the
harness, not a model); tokens are counted as characters / 4. A real CLAG run over real BioASQ
streams (``llm.backend=openai``, every stream at once) drives it.

Reported: requests in flight over time; throughput as a share of the stub's capacity *at the
load the run offered* (busy share: the fraction of wall time the stub had work; batch fill:
mean active sequences / max_seqs); harness overhead (wall time the stub sat idle while the run
was going); and a projection of ``paper_main`` on one GPU from the measured tokens per memory
and per question and a published vLLM throughput for Qwen3-0.6B (cited in the output).
Writes results/bench/serving.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import mean
from tempfile import TemporaryDirectory
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.bench_common import ROOT, write_result  # noqa: E402

#: vLLM 0.19.0 serving Qwen/Qwen3-0.6B on one H100 80GB, `vllm bench serve` random 512 in / 128 out,
#: rate=inf: 94.91 requests/s, TPOT 5.45 ms (ovg-project/kvcached, pull request 331,
#: benchmarks/bench_layout/H100_results.md, config A "vanilla"). An H200 has more memory bandwidth,
#: so this is a conservative rate for one H200.
PUBLISHED = {"source": "ovg-project/kvcached PR 331, benchmarks/bench_layout/H100_results.md (vLLM 0.19.0, "
                       "Qwen/Qwen3-0.6B, H100 80GB, random 512 in/128 out, rate=inf, config A)",
             "requests_per_s": 94.91, "prompt_tokens": 512, "completion_tokens": 128}

#: the paper's datasets (python -m eval data verify): turns and questions over all streams
PAPER_MAIN = {"locomo": (5882, 1986), "hotpotqa": (8475, 200), "bioasq": (2724, 200)}
PAPER_METHODS = 5
#: each sweep preset's work: the datasets it runs and how many methods run on each
PRESET_WORK = {"paper_main": (tuple(PAPER_MAIN), PAPER_METHODS),
               "paper_main_server": (tuple(PAPER_MAIN), PAPER_METHODS),
               "paper_ablation": (("bioasq",), 3)}


def scripted_reply(body: dict[str, Any]) -> str:
    """A well-formed reply for the schema the request carries (the harness's own call shapes)."""
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema") or {}
    props = schema.get("properties", {})
    text = body.get("prompt") or " ".join(m.get("content", "") for m in body.get("messages", []))
    words = [w for w in re.findall(r"[A-Za-z]{5,}", text)][-6:] or ["memory"]
    if "should_evolve" in props:
        ids = [int(i) for i in re.findall(r"memory index:(\d+)", text)][:1]
        return json.dumps({k: v for k, v in {
            "should_evolve": bool(ids), "actions": ["strengthen"] if ids else [],
            "suggested_connections": ids, "tags_to_update": words[:2], "new_context_neighborhood": [],
            "new_tags_neighborhood": []}.items() if k in props})
    if "choice" in props:
        enum = props["choice"].get("enum")
        ids = enum or re.findall(r"- cluster_id: (\S+)", text)
        return json.dumps({"choice": ids[0] if ids else "new"})
    if "selected_clusters" in props:
        enum = props["selected_clusters"].get("items", {}).get("enum") or ["c0"]
        return json.dumps({"selected_clusters": enum[:2]})
    if "context" in props:
        return json.dumps({"keywords": words[:4], "context": "A statement about " + " ".join(words[:3]) + ".",
                           "tags": words[:2]})
    if "summary" in props:
        return json.dumps({"summary": "Notes about " + " ".join(words[:4]) + ".", "tags": words[:3]})
    if "keywords" in props:
        return json.dumps({"keywords": ", ".join(words[:4])})
    return json.dumps({"answer": words[0]})


@dataclass
class _Job:
    prompt_tokens: int
    remaining: int
    done: threading.Event = field(default_factory=threading.Event)
    admitted: bool = False


class BatchedDecodeStub:
    """The loopback server and its simulated GPU (see the module docstring for the step model)."""

    def __init__(self, base_ms: float, per_seq_ms: float, per_prefill_token_ms: float, max_seqs: int) -> None:
        self.base_ms, self.per_seq_ms = base_ms, per_seq_ms
        self.per_prefill_token_ms, self.max_seqs = per_prefill_token_ms, max_seqs
        self.waiting: deque[_Job] = deque()
        self.lock = threading.Condition()
        self.in_flight = 0
        self.busy_s = 0.0
        self.steps = 0
        self.active_sum = 0
        self.tokens_out = 0
        self.tokens_in = 0
        self.requests = 0
        self.samples: list[tuple[float, int, int]] = []   # (time, requests in flight, active sequences)
        self._active: list[_Job] = []
        self._stop = False
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = scripted_reply(body)
                prompt = body.get("prompt") or "".join(m.get("content", "") for m in body.get("messages", []))
                job = _Job(prompt_tokens=max(1, len(prompt) // 4), remaining=max(1, len(text) // 4))
                with stub.lock:
                    stub.in_flight += 1
                    stub.requests += 1
                    stub.waiting.append(job)
                    stub.lock.notify()
                job.done.wait()
                with stub.lock:
                    stub.in_flight -= 1
                usage = {"prompt_tokens": job.prompt_tokens, "completion_tokens": max(1, len(text) // 4)}
                chat = self.path.endswith("/chat/completions")
                choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
                if chat:
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice.update(text=text, logprobs=None)
                data = json.dumps({"id": "x", "object": "chat.completion" if chat else "text_completion",
                                   "created": 0, "model": body["model"], "choices": [choice],
                                   "usage": {**usage, "total_tokens": sum(usage.values())}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.threads = [threading.Thread(target=self.httpd.serve_forever, daemon=True),
                        threading.Thread(target=self._engine, daemon=True),
                        threading.Thread(target=self._sampler, daemon=True)]
        for t in self.threads:
            t.start()

    def capacity_tokens_per_s(self) -> float:
        return self.max_seqs / ((self.base_ms + self.per_seq_ms * self.max_seqs) / 1000)

    def _engine(self) -> None:
        while not self._stop:
            with self.lock:
                while not self.waiting and not self._active and not self._stop:
                    self.lock.wait(timeout=0.1)
                admitted = []
                while self.waiting and len(self._active) < self.max_seqs:
                    job = self.waiting.popleft()
                    self._active.append(job)
                    admitted.append(job)
                active = list(self._active)
            if not active:
                continue
            prefill = sum(j.prompt_tokens for j in admitted)
            step = (self.base_ms + self.per_seq_ms * len(active) + self.per_prefill_token_ms * prefill) / 1000
            time.sleep(step)
            finished = []
            for job in active:
                job.remaining -= 1
                if job.remaining <= 0:
                    finished.append(job)
            with self.lock:
                self.busy_s += step
                self.steps += 1
                self.active_sum += len(active)
                self.tokens_out += len(active)
                self.tokens_in += prefill
                for job in finished:
                    self._active.remove(job)
            for job in finished:
                job.done.set()

    def _sampler(self) -> None:
        start = time.perf_counter()
        while not self._stop:
            with self.lock:
                self.samples.append((time.perf_counter() - start, self.in_flight, len(self._active)))
            time.sleep(0.25)

    def close(self) -> None:
        self._stop = True
        self.httpd.shutdown()


def clag_command(url: str, turns: int, questions: int, root: Path, seed: int) -> list[str]:
    return [sys.executable, "-m", "eval", "run", "method=clag", "data=bioasq", "data.subset.samples=10",
           f"seed={seed}",
           f"data.subset.turns={turns}", f"data.subset.questions_per_sample={questions}", "llm=qwen3-0.6b",
           "llm.backend=openai", "llm.model=Qwen/Qwen3-0.6B", f"llm.base_url={url}", "llm.concurrency=64",
           "concurrency.streams=10", "concurrency.questions=8", "concurrency.max_batch=64",
           f"results_root={root / 'runs'}", f"snapshot_dir={root / 'snap'}",
           f"llm.cache_path={root / 'c.sqlite'}", "progress=false"]


def run_clag(url: str, turns: int, questions: int, root: Path, jobs: int) -> tuple[float, dict[str, Any]]:
    """``jobs`` CLAG runs at once (as a sweep's parallel jobs would be; distinct seeds), each with
    its 10 streams concurrent. Returns the wall time and the ledger of the first."""
    started = time.perf_counter()
    procs = [subprocess.Popen(clag_command(url, turns, questions, root / f"job{j}", seed=42 + j), cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for j in range(jobs)]
    errors = [p.communicate()[1] for p in procs]
    wall = time.perf_counter() - started
    for proc, err in zip(procs, errors):
        if proc.returncode != 0:
            raise SystemExit(f"a CLAG run failed:\n{err[-3000:]}")
    ledger = json.loads(next((root / "job0" / "runs").glob("*/*/*/*/ledger.json")).read_text())
    return wall, ledger


def projection(ledger: dict[str, Any], memories: int, questions: int) -> dict[str, Any]:
    """paper_main on one GPU: every method costing what CLAG cost here per memory and per
    question (CLAG is among the costliest per memory), at the published server rate; and the
    same projection for each sweep preset (:data:`PRESET_WORK`)."""
    phases = ledger.get("by_phase", {})
    ingest, answer = phases.get("ingest", {}), phases.get("question", {})
    per_memory = {k: ingest.get(k, 0) / memories for k in ("calls", "prompt_tokens", "completion_tokens")}
    per_question = {k: answer.get(k, 0) / questions for k in ("calls", "prompt_tokens", "completion_tokens")}
    main = preset_projection(per_memory, per_question, "paper_main")
    return {"per_memory": per_memory, "per_question": per_question, "paper_main_turns": main["turns"],
            "paper_main_questions": main["questions"], "methods": PAPER_METHODS, "total": main["total"],
            "published": PUBLISHED, "prompt_tokens_per_s": main["prompt_tokens_per_s"],
            "output_tokens_per_s": main["output_tokens_per_s"], "projected_hours": main["projected_hours"],
            "presets": {name: preset_projection(per_memory, per_question, name) for name in PRESET_WORK}}


def preset_projection(per_memory: dict[str, float], per_question: dict[str, float],
                      preset: str) -> dict[str, Any]:
    """One preset's LLM work at CLAG's cost per memory and per question, and its hours at the
    published rate, counting prompt and output work as if they never overlapped (conservative)."""
    datasets, methods = PRESET_WORK[preset]
    turns = sum(PAPER_MAIN[d][0] for d in datasets)
    qs = sum(PAPER_MAIN[d][1] for d in datasets)
    total = {k: methods * (turns * per_memory[k] + qs * per_question[k]) for k in per_memory}
    prompt_rate = PUBLISHED["requests_per_s"] * PUBLISHED["prompt_tokens"]
    output_rate = PUBLISHED["requests_per_s"] * PUBLISHED["completion_tokens"]
    seconds = total["prompt_tokens"] / prompt_rate + total["completion_tokens"] / output_rate
    return {"datasets": list(datasets), "methods": methods, "turns": turns, "questions": qs, "total": total,
            "prompt_tokens_per_s": prompt_rate, "output_tokens_per_s": output_rate,
            "projected_hours": seconds / 3600}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40, help="turns per BioASQ stream (10 streams)")
    parser.add_argument("--questions", type=int, default=3, help="questions per stream")
    parser.add_argument("--jobs", type=int, default=1, help="CLAG runs at once (a sweep's parallel jobs)")
    parser.add_argument("--base-ms", type=float, default=4.0)
    parser.add_argument("--per-seq-ms", type=float, default=0.006)
    parser.add_argument("--per-prefill-token-ms", type=float, default=0.0002)
    parser.add_argument("--max-seqs", type=int, default=256)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    stub = BatchedDecodeStub(args.base_ms, args.per_seq_ms, args.per_prefill_token_ms, args.max_seqs)
    with TemporaryDirectory() as tmp:
        wall, ledger = run_clag(stub.url, args.turns, args.questions, Path(tmp), args.jobs)
    stub.close()
    in_flight = [s[1] for s in stub.samples]
    active = [s[2] for s in stub.samples]
    busy_share = stub.busy_s / wall
    memories, questions = 10 * args.turns, 10 * args.questions
    result = {
        "stub": {"model": "step_s = (base_ms + per_seq_ms*active"
                          " + per_prefill_token_ms*admitted_prompt_tokens)/1000",
                 "base_ms": args.base_ms, "per_seq_ms": args.per_seq_ms,
                 "per_prefill_token_ms": args.per_prefill_token_ms, "max_seqs": args.max_seqs,
                 "capacity_tokens_per_s": stub.capacity_tokens_per_s()},
        "run": {"method": "clag", "data": "bioasq", "jobs": args.jobs, "streams": 10,
                "turns_per_stream": args.turns,
                "questions_per_stream": args.questions, "wall_s": wall, "requests": stub.requests,
                "calls_in_ledger": ledger["total"]["calls"], "errors": ledger["total"]["errors"]},
        "in_flight": {"max": max(in_flight, default=0), "mean": mean(in_flight) if in_flight else 0,
                      "p50": sorted(in_flight)[len(in_flight) // 2] if in_flight else 0,
                      "series_every_0_25_s": in_flight},
        "active_sequences": {"max": max(active, default=0), "mean": mean(active) if active else 0},
        "throughput": {"output_tokens_per_s": stub.tokens_out / wall,
                       "share_of_capacity": stub.tokens_out / wall / stub.capacity_tokens_per_s(),
                       "busy_share": busy_share,
                       "mean_batch_fill": stub.active_sum / max(stub.steps, 1) / args.max_seqs},
        "harness_overhead_share": 1.0 - busy_share,
        "projection": projection(ledger, memories, questions),
    }
    path = write_result("serving", result, args.out)
    t, p = result["throughput"], result["projection"]
    print(f"{stub.requests} requests in {wall:.1f} s; in flight: max {result['in_flight']['max']}, "
          f"mean {result['in_flight']['mean']:.1f}; stub busy {t['busy_share']:.0%} of the wall time, "
          f"batch fill {t['mean_batch_fill']:.1%}, {t['output_tokens_per_s']:.0f} tokens/s "
          f"({t['share_of_capacity']:.1%} of the stub's full-batch capacity)")
    for name, q in p["presets"].items():
        print(f"{name} projection on one GPU: {q['projected_hours']:.2f} h "
              f"({q['total']['calls']:.0f} calls, {q['total']['prompt_tokens'] / 1e6:.1f} M prompt tokens)")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
