"""The one LLM entry point memory systems use: cache, seeds, JSON parsing and the ledger.

It wraps any backend (lm-eval's ``CachingLM`` idea): a request is looked up in the cache first;
the misses go to the backend as one batch; a reasoning block is stripped (here, once, for every
backend); every completion with a schema is parsed as the reference parses it, and failures are
counted per tag, never silently dropped.

A backend's failure after its retries is an *error completion*: counted, never cached, and
handed to the caller, whose fallback is the reference's for an empty reply. The run stops — with
one line — once errors exceed ``max_error_rate`` of the fresh calls plus ``error_allowance``
(a few early failures of a healthy server do not stop a run; a dead server stops it after a
handful of calls).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from tqdm.auto import tqdm

from clag.errors import UserFacingError
from clag.llm.cache import RequestCache, request_key
from clag.llm.calllog import CallLog, call_record
from clag.llm.decoding import strip_reasoning
from clag.llm.jsonout import JSONParseError, extract_json, schema_violation
from clag.llm.ledger import Ledger
from clag.llm.request_format import RequestFormat
from clag.llm.types import LLM, Completion, Request


class ErrorRateExceeded(UserFacingError):
    """Too many requests failed after their retries for the run's numbers to mean anything."""


class LLMClient:
    #: prefetched requests go to the backend (and into the cache) this many at a time, so an
    #: interruption loses at most one chunk (``batching.prefetch_chunk``)
    prefetch_chunk = 64
    #: the backend decodes a batch one request after another (an in-process llama.cpp model):
    #: prefetch then sends one request at a time, the same requests in the same order, so each
    #: reply is cached as it comes and a stop loses at most the request in flight
    decodes_one_at_a_time = False

    def __init__(self, backend: LLM, ledger: Ledger | None = None, cache: RequestCache | None = None,
                 run_seed: int = 42, max_error_rate: float = 0.1, error_allowance: int = 3,
                 progress: bool = False, greedy: bool = False) -> None:
        if not 0.0 <= max_error_rate <= 1.0:
            raise ValueError(f"max_error_rate must be in [0, 1], not {max_error_rate}")
        self.backend = backend
        self.ledger = ledger or Ledger()
        self.cache = cache
        self.run_seed = run_seed
        self.max_error_rate = max_error_rate
        self.error_allowance = max(0, int(error_allowance))
        self.progress = progress
        self.greedy = greedy
        self._fresh_calls = 0
        self._errors = 0
        self._last_error = ""
        self._error_lock = threading.Lock()
        self._local = threading.local()          # scope and counters are per thread
        self._prefetched: dict[str, list[Completion]] = {}
        self._prefetch_lock = threading.Lock()
        #: where each call's record goes (``calls.jsonl`` of the run), once a run directory exists
        self.call_log: CallLog | None = None
        #: how prompts are sent (``profile.request_format``): applied before seeds and cache keys
        self.request_format = RequestFormat()

    @property
    def _scope(self) -> str:
        return getattr(self._local, "scope", "")

    @property
    def _occurrences(self) -> Counter[str]:
        if not hasattr(self._local, "occurrences"):
            self._local.occurrences = Counter()
        return self._local.occurrences

    @_occurrences.setter
    def _occurrences(self, value: Counter[str]) -> None:
        self._local.occurrences = value

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Derive sampling seeds within ``name`` (a stream, a question): a run that skips some
        streams or questions (a resumed run) draws exactly what an uninterrupted one draws, and
        questions answered concurrently (each scope lives in its own thread) draw the same too."""
        previous, previous_counts = self._scope, self._occurrences
        self._local.scope, self._local.occurrences = name, Counter()
        try:
            yield
        finally:
            self._local.scope, self._local.occurrences = previous, previous_counts

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def _seeded(self, request: Request) -> Request:
        """Sampled calls get a seed derived from the run seed, the scope, the request and how many
        identical requests came before it in that scope, so a rerun draws exactly the same samples.
        Under ``greedy`` every call decodes at temperature 0 (``llm.greedy``: one answer per
        prompt, whatever the seed — the documented alternative to averaging seeds). The request is
        first put in the run's request format, so the format is part of its seed and cache key."""
        request = self.request_format.apply(request)
        if self.greedy and request.temperature > 0:
            request = replace(request, temperature=0.0)
        if request.temperature <= 0:
            return replace(request, seed=None)
        if request.seed is not None:
            return request
        base = request_key(self.model_id, request)
        nth = self._occurrences[base]
        self._occurrences[base] += 1
        digest = hashlib.sha256(f"{self.run_seed}:{self._scope}:{base}:{nth}".encode()).digest()
        return replace(request, seed=int.from_bytes(digest[:4], "little"))

    def prefetch(self, requests: list[Request]) -> None:
        """Generate, as one batch now, requests that will be made later one at a time because they
        depend on nothing that changes meanwhile (note analysis depends only on its turn). The
        later calls get these completions — same seeds, so the same results as the one-at-a-time
        path on the same cache — and are accounted here, once."""
        saved = Counter(self._occurrences)
        seeded = [self._seeded(r) for r in requests]
        self._occurrences = saved              # the later calls draw these same seeds again
        size = 1 if self.decodes_one_at_a_time else self.prefetch_chunk
        with tqdm(total=len(seeded), desc=f"prefetch {self._scope or ''}".strip(), leave=False,
                  disable=not self.progress or len(seeded) <= size) as bar:
            for start in range(0, len(seeded), size):   # each chunk is cached as soon as it returns
                chunk = seeded[start:start + size]
                completions = self._complete(chunk)
                with self._prefetch_lock:
                    for request, completion in zip(chunk, completions):
                        key = request_key(self.model_id, request)
                        self._prefetched.setdefault(key, []).append(completion)
                bar.update(len(chunk))

    def generate(self, requests: list[Request]) -> list[Completion]:
        seeded = [self._seeded(r) for r in requests]
        results: list[Completion | None] = [None] * len(seeded)
        pending = []
        with self._prefetch_lock:
            for i, request in enumerate(seeded):
                waiting = self._prefetched.get(request_key(self.model_id, request))
                if waiting:
                    results[i] = waiting.pop(0)
                else:
                    pending.append(i)
        for i, completion in zip(pending, self._complete([seeded[i] for i in pending])):
            results[i] = completion
        return [c for c in results if c is not None]

    def _complete(self, seeded: list[Request]) -> list[Completion]:
        """Cache lookups, one backend batch for the misses, accounting."""
        keys = [request_key(self.model_id, r) for r in seeded]
        results: list[Completion | None] = [None] * len(seeded)
        misses: list[int] = []
        for i, key in enumerate(keys):
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                hit.cached = True
                results[i] = hit
            else:
                misses.append(i)
        if misses:
            fresh = self.backend.generate([seeded[i] for i in misses])
            if len(fresh) != len(misses):
                raise RuntimeError(f"backend returned {len(fresh)} completions for {len(misses)} requests")
            for i, completion in zip(misses, fresh):
                if self.cache is not None and completion.finish_reason != "error":
                    self.cache.put(keys[i], completion)
                results[i] = completion
            self._check_error_rate(fresh)
        done: list[Completion] = []
        for request, completion, key in zip(seeded, results, keys):
            assert completion is not None
            self._account(request, completion, key)
            done.append(completion)
        return done

    def _check_error_rate(self, fresh: list[Completion]) -> None:
        with self._error_lock:
            self._fresh_calls += len(fresh)
            for completion in fresh:
                if completion.finish_reason == "error":
                    self._errors += 1
                    self._last_error = str(completion.extra.get("error", "backend error"))
            calls, errors = self._fresh_calls, self._errors
        if errors > self.max_error_rate * calls + self.error_allowance:
            raise ErrorRateExceeded(
                f"{errors} of {calls} LLM requests failed ({errors / calls:.0%} > llm.max_error_rate "
                f"{self.max_error_rate:.0%}); last: {self._last_error}")

    def _account(self, request: Request, completion: Completion, key: str) -> None:
        counts: dict[str, float] = {"calls": 1}
        if completion.cached:
            counts.update(cache_hits=1, cached_prompt_tokens=completion.prompt_tokens,
                          cached_completion_tokens=completion.completion_tokens)
        else:
            counts.update(prompt_tokens=completion.prompt_tokens,
                          completion_tokens=completion.completion_tokens,
                          latency_s=completion.latency_s)
        if completion.finish_reason == "length":
            counts["truncated"] = 1
        if completion.finish_reason == "error":
            counts["errors"] = 1
        if completion.extra.get("prompt_truncated"):
            counts["prompts_truncated"] = 1
        completion.text = strip_reasoning(completion.text)
        if completion.finish_reason == "error":
            completion.parse_error = "backend error"   # the caller's fallback for an empty reply
        elif request.output_schema is not None:
            try:
                completion.parsed = extract_json(completion.text)
            except JSONParseError as exc:
                completion.parse_error = str(exc)
                counts["parse_failures"] = 1
            else:
                if schema_violation(completion.parsed, request.output_schema) is not None:
                    counts["schema_violations"] = 1
        if self.call_log is not None:
            self.call_log.write(call_record(request, completion, self._scope, key,
                                            schema_violated=bool(counts.get("schema_violations"))))
        # the phase is the scope's kind: "ingest:<stream>" → ingest, "question:<id>" → question
        self.ledger.record(request.tag, phase=self._scope.split(":", 1)[0] or None, **counts)
