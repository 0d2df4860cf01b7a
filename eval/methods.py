"""The method registry: a method name → a builder that makes its memory systems and answerer.

A builder takes the resolved run config and returns a :class:`MethodRun`. Adding a method is
one builder, one ``METHODS.register`` line (a lazy ``"module:attr"`` string) and one
``configs/method/<name>.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from clag.registry import Registry
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


MethodBuilder = Callable[[Mapping[str, Any]], MethodRun]
METHODS: Registry[MethodBuilder] = Registry("method")
