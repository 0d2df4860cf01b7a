"""The call ledger: per call tag and per phase (ingest, question), how many calls, tokens,
seconds and failures a run cost."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class TagStats:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0          # backend time of fresh (uncached) calls
    parse_failures: int = 0         # schema requested, no parsable JSON object came back
    schema_violations: int = 0      # parsed, but not what the schema allows
    truncated: int = 0              # stopped at max_tokens
    errors: int = 0                 # backend failed after retries
    prompts_truncated: int = 0      # prompt longer than the context window: its start was cut
    cached_prompt_tokens: int = 0   # what the cache hits cost when they were made: a method's own
    cached_completion_tokens: int = 0   # cost, whichever run paid it first


class Ledger:
    """Thread-safe counters by tag and by phase; ``to_dict`` is what ``ledger.json`` holds."""

    def __init__(self) -> None:
        self._tags: dict[str, TagStats] = defaultdict(TagStats)
        self._phases: dict[str, TagStats] = defaultdict(TagStats)
        self._lock = threading.Lock()

    def record(self, tag: str, phase: str | None = None, **increments: float) -> None:
        with self._lock:
            for stats in (self._tags[tag], self._phases[phase]) if phase else (self._tags[tag],):
                for name, value in increments.items():
                    setattr(stats, name, getattr(stats, name) + value)

    def tag(self, tag: str) -> TagStats:
        return self._tags[tag]

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            tags = {tag: asdict(stats) for tag, stats in sorted(self._tags.items())}
            phases = {phase: asdict(stats) for phase, stats in sorted(self._phases.items())}
        total = TagStats()
        for stats in tags.values():
            for name, value in stats.items():
                setattr(total, name, getattr(total, name) + value)
        report: dict[str, Any] = {"by_tag": tags, "total": asdict(total)}
        if phases:
            report["by_phase"] = phases
        return report


def summed_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Ledger reports (``ledger.json``) added up: the counts of every tag, phase and the total
    summed; every other key (model, prompt set, decoding) from the first report. A resumed run's
    sessions and runs pooled over streams are both such sums."""
    merged = json.loads(json.dumps(reports[0]))
    for report in reports[1:]:
        for section in ("by_tag", "by_phase"):
            for tag, counts in report.get(section, {}).items():
                target = merged.setdefault(section, {}).setdefault(tag, {})
                for name, value in counts.items():
                    target[name] = target.get(name, 0) + value
        for name, value in report.get("total", {}).items():
            merged.setdefault("total", {})[name] = merged.get("total", {}).get(name, 0) + value
    return merged


def every_call_failed(total: dict[str, Any]) -> str | None:
    """Why a run whose every fresh LLM request failed must not count as complete, or None.

    Under ``max_error_rate: 1.0`` (the reference's semantics) such a run goes to its end on empty
    replies; its scores measure the fallbacks, not a model."""
    fresh = int(total.get("calls", 0)) - int(total.get("cache_hits", 0))
    errors = int(total.get("errors", 0))
    if fresh <= 0 or errors < fresh:
        return None
    return (f"every one of the run's {fresh} LLM requests failed after its retries, so its answers are "
            "the empty-reply fallbacks; see calls.jsonl for the errors")
