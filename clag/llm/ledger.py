"""The call ledger: per call tag, how many calls, tokens, seconds and failures a run cost."""

from __future__ import annotations

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


class Ledger:
    """Thread-safe counters by tag; ``to_dict`` is what ``ledger.json`` holds."""

    def __init__(self) -> None:
        self._tags: dict[str, TagStats] = defaultdict(TagStats)
        self._lock = threading.Lock()

    def record(self, tag: str, **increments: float) -> None:
        with self._lock:
            stats = self._tags[tag]
            for name, value in increments.items():
                setattr(stats, name, getattr(stats, name) + value)

    def tag(self, tag: str) -> TagStats:
        return self._tags[tag]

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            tags = {tag: asdict(stats) for tag, stats in sorted(self._tags.items())}
        total = TagStats()
        for stats in tags.values():
            for name, value in stats.items():
                setattr(total, name, getattr(total, name) + value)
        return {"by_tag": tags, "total": asdict(total)}
