"""A small name → object registry: the LLM backend kinds (`llm.backend=hf|openai|llamacpp`).

Entries are ``"module:attr"`` strings resolved on first use, so listing what exists never
imports torch. An unknown name answers with the valid names and a "did you mean".
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(LookupError):
    """A user asked for a name no registry entry has; the message lists the valid ones."""


class Registry(Generic[T]):
    """Name → lazily imported object."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._targets: dict[str, str | T] = {}

    def register(self, name: str, target: str | T) -> None:
        """Register ``target`` (an object or a ``"module:attr"`` path) under ``name``."""
        if name in self._targets:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._targets[name] = target

    def names(self) -> list[str]:
        return sorted(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def get(self, name: str) -> T:
        if name not in self._targets:
            raise UnknownNameError(self.unknown_message(name))
        target = self._targets[name]
        if isinstance(target, str):
            module_name, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module_name), attr)
            self._targets[name] = target
        return target  # type: ignore[return-value]

    def unknown_message(self, name: Any) -> str:
        valid = self.names()
        if not valid:
            return f"unknown {self.kind} {name!r}: no {self.kind} is registered yet"
        hint = difflib.get_close_matches(str(name), valid, n=1)
        did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
        return f"unknown {self.kind} {name!r}{did_you_mean}; valid: {', '.join(valid)}"
