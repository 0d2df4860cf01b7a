"""A micro-batcher: concurrent ``generate`` calls from many threads become one backend batch.

Questions of a stream (memory is read-only then) and independent streams run in threads; each
thread makes its calls one at a time, as the reference does. In front of a backend that batches
(hf with padding, vLLM, an OpenAI-compatible server under concurrency), this collects what the
threads ask within ``max_wait_s`` (or until ``max_batch`` requests) and sends it as one call, so
the keyword calls of twenty questions go out together, then their selections, then their answers.
Results go back to each caller in its own order; an exception reaches every caller of that batch.
Only the worker thread touches the backend, so backends need not be thread-safe.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

from clag.llm.types import LLM, Completion, Request


@dataclass
class _Job:
    requests: list[Request]
    done: threading.Event = field(default_factory=threading.Event)
    results: list[Completion] | None = None
    error: BaseException | None = None


class MicroBatcher:
    def __init__(self, backend: LLM, max_batch: int = 32, max_wait_s: float = 0.02) -> None:
        if max_batch < 1 or max_wait_s < 0:
            raise ValueError("max_batch must be at least 1 and max_wait_s not negative")
        self.backend = backend
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.batch_sizes: list[int] = []
        self._jobs: queue.Queue[_Job] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def generate(self, requests: list[Request]) -> list[Completion]:
        if not requests:
            return []
        self._ensure_worker()
        job = _Job(list(requests))
        self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.results is not None
        return job.results

    def _ensure_worker(self) -> None:
        with self._start_lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._serve, name="llm-micro-batcher", daemon=True)
                self._worker.start()

    def _collect(self) -> list[_Job]:
        jobs = [self._jobs.get()]
        size = len(jobs[0].requests)
        deadline = time.monotonic() + self.max_wait_s
        while size < self.max_batch:
            remaining = deadline - time.monotonic()
            try:
                job = self._jobs.get(timeout=remaining) if remaining > 0 else self._jobs.get_nowait()
            except queue.Empty:
                break
            jobs.append(job)
            size += len(job.requests)
        return jobs

    def _serve(self) -> None:
        while True:
            jobs = self._collect()
            flat = [r for job in jobs for r in job.requests]
            self.batch_sizes.append(len(flat))
            try:
                results = self.backend.generate(flat)
                if len(results) != len(flat):
                    raise RuntimeError(f"backend gave {len(results)} completions for {len(flat)} requests")
            except BaseException as exc:     # handed to every waiting caller, never swallowed
                for job in jobs:
                    job.error = exc
                    job.done.set()
                continue
            start = 0
            for job in jobs:
                job.results = results[start:start + len(job.requests)]
                start += len(job.requests)
                job.done.set()
