"""A whole memory method in one class (docs/methods.md, "Adding a method"): keeps every turn and
retrieves the ``k`` that share the most words with the question. No LLM at ingest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from clag.types import MemorySystem, Question, Retrieval, Turn


@dataclass(frozen=True)
class WordOverlapOptions:
    k: int = 10                      # turns retrieved per question


class WordOverlapMemory(MemorySystem):
    options_class: ClassVar[type[WordOverlapOptions]] = WordOverlapOptions

    def __init__(self, **options: Any) -> None:
        self.options = self.options_class(**options)
        self.turns: list[Turn] = []

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)

    def retrieve(self, question: Question) -> Retrieval:
        words = set(question.text.lower().split())
        ranked = sorted(self.turns, key=lambda t: -len(words & set(t.text.lower().split())))
        ranked = ranked[: self.options.k]
        return Retrieval([t.id for t in ranked], "\n".join(t.text for t in ranked))

    def stats(self) -> dict[str, Any]:
        return {"memories": len(self.turns)}
