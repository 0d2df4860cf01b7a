"""What the runner needs from a method, and what an answerer gives back.

Its own module, below both: the runner takes a :class:`MethodRun`, the methods build one, and
the answerers (``eval/answer.py``) return :class:`Answer` — none of them imports another for it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from clag.types import MemorySystem, Question, Retrieval, Sample


@dataclass
class Answer:
    """A prediction and whatever the answerer wants kept with it (prompt id, parse status)."""

    text: str
    debug: dict[str, Any] = field(default_factory=dict)


class Answerer(Protocol):
    def __call__(self, question: Question, retrieval: Retrieval) -> Answer: ...


@dataclass
class MethodRun:
    """What the runner needs from a method: fresh memory per stream, an answerer, a ledger."""

    make_memory: Callable[[Sample], MemorySystem]
    answer: Answerer
    ledger: Callable[[], dict[str, Any]] = dict
    #: seeds of sampled LLM calls are derived within a named scope (a stream, a question)
    scope: Callable[[str], AbstractContextManager] = lambda name: nullcontext()
    #: batch the calls of a stream that depend only on its turns before the sequential part
    prefetch_ingest: bool = False
    #: start writing every LLM call's record to this file (the run's ``calls.jsonl``)
    record_calls: Callable[[Path], None] = lambda path: None
    #: per call tag, the example values its prompt templates show (``clag.placeholders``)
    placeholders: dict[str, list[str]] = field(default_factory=dict)
    #: before anything is ingested: stop with one line if the LLM cannot answer (a server that is
    #: down, misnamed or refuses the run's requests); returns a warning line or None
    check_llm: Callable[[], str | None] = lambda: None
