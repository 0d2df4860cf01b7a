"""The data contract every loader produces and every memory system consumes.

A memory stream is a :class:`Sample`: its turns, ingested one at a time in order, then its
questions. Turn ids are the dataset's own evidence ids (LoCoMo ``"D1:3"``, HotpotQA/BioASQ
``"chunk:n"``), so retrieval is always scored on ids, never by matching text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

#: How a turn becomes the text a memory system stores. ``reference`` reproduces A-mem's and
#: CLAG's evaluation scripts, which build ``"Speaker " + speaker + "says : " + text`` (the
#: missing space before "says" is theirs and changes what gets embedded, so it is the default).
MEMORY_CONTENT_FORMATS: dict[str, str] = {
    "reference": "Speaker {speaker}says : {text}",
    "spaced": "Speaker {speaker} says: {text}",
    "text": "{text}",
}


@dataclass(frozen=True)
class Turn:
    """One utterance (or sentence) of a memory stream."""

    id: str
    speaker: str
    text: str
    timestamp: str
    session: str

    def memory_content(self, style: str = "reference") -> str:
        """The text a memory system stores for this turn, in a named format."""
        try:
            template = MEMORY_CONTENT_FORMATS[style]
        except KeyError:
            valid = ", ".join(sorted(MEMORY_CONTENT_FORMATS))
            raise ValueError(f"unknown memory content format {style!r}; valid: {valid}") from None
        return template.format(speaker=self.speaker, text=self.text)


@dataclass(frozen=True)
class Question:
    """A question asked after its stream is ingested.

    ``answer`` is the reference the paper scores against (LoCoMo category 5: the adversarial
    answer). ``extra`` keeps what a corrected score needs (e.g. ``true_answer``).
    """

    id: str
    text: str
    answer: str
    category: int
    evidence: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Sample:
    """One memory stream and the questions asked after it."""

    id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    def turn_ids(self) -> set[str]:
        return {t.id for t in self.turns}


@dataclass
class Retrieval:
    """What a memory system returns for one question.

    ``turn_ids`` is the ranked list of source turns of the retrieved memories (deduplicated,
    best first); ``context`` is the text handed to the answer prompt; ``debug`` holds whatever
    the method wants kept with the prediction (selected clusters, search-space size, ...).
    ``ranked`` is false where ``turn_ids`` is not a ranking of turns (GAM's are the lines of the
    pages it read, in stream order): rank metrics such as R@10 then describe the order of a
    page, not the retrieval, and tables mark them as not comparable.
    """

    turn_ids: list[str]
    context: str
    debug: dict[str, Any] = field(default_factory=dict)
    ranked: bool = True


@runtime_checkable
class MemorySystem(Protocol):
    """One interface for CLAG, its ablations and every baseline."""

    def ingest(self, turn: Turn) -> None:
        """Store one memory, in stream order."""

    def finalize(self) -> None:
        """End-of-stream work (CLAG's last consolidation); a no-op for most methods."""

    def retrieve(self, question: Question) -> Retrieval:
        """Ranked turn ids and the answer-prompt context for one question."""

    def stats(self) -> dict[str, Any]:
        """Method-specific statistics written with the run (clusters, sizes, ...)."""
