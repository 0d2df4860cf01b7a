"""The data contract every loader produces and every memory system consumes.

A memory stream is a :class:`Sample`: its turns, ingested one at a time in order, then its
questions. Turn ids are the dataset's own evidence ids (LoCoMo ``"D1:3"``, HotpotQA/BioASQ
``"chunk:n"``), so retrieval is always scored on ids, never by matching text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

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


class MemorySystem:
    """One interface for CLAG, its ablations and every baseline: subclass it.

    A method must implement :meth:`ingest` and :meth:`retrieve`. Everything else here is an
    optional member with a default, found in this one place (as ``torch.nn.Module`` does with
    ``state_dict``) — the runner, the snapshots, the health report and the placeholder check
    call these, never look for attributes by name:

    - :meth:`finalize`, :meth:`stats`: end-of-stream work; what ``memory_stats.json`` keeps.
    - :meth:`prefetch`: batch the calls that depend only on the stream's turns, before the
      sequential part of ingestion (``batching.prefetch_ingest``).
    - :attr:`concurrent_reads`: True when :meth:`retrieve` only reads memory, so the questions
      of a stream may run in threads (``concurrency.questions``).
    - :meth:`prompt_templates`: the renders of the method's own prompts, for the check that a
      reply did not copy a prompt's example values (:mod:`clag.placeholders`).
    - :attr:`resources`, :meth:`snapshot_state`, :meth:`load_snapshot_state`: what a memory
      snapshot keeps (everything but the shared embedder and LLM client) and how it comes back.
    """

    #: retrieval only reads memory: a stream's questions may be answered concurrently
    concurrent_reads: ClassVar[bool] = False
    #: attributes holding the run's shared resources: never snapshotted, kept on restore
    resources: ClassVar[frozenset[str]] = frozenset({"embedder", "llm"})

    def ingest(self, turn: Turn) -> None:
        """Store one memory, in stream order."""
        raise NotImplementedError

    def retrieve(self, question: Question) -> Retrieval:
        """Ranked turn ids and the answer-prompt context for one question."""
        raise NotImplementedError

    def finalize(self) -> None:
        """End-of-stream work (CLAG's last consolidation); a no-op for most methods."""

    def stats(self) -> dict[str, Any]:
        """Method-specific statistics written with the run (clusters, sizes, routing log, ...)."""
        return {}

    def prefetch(self, turns: Sequence[Turn]) -> None:
        """Issue, as one batch, the LLM calls of ``turns`` that depend on nothing ingestion
        changes (A-mem's and CLAG's note analyses); the later one-at-a-time calls get them."""

    @staticmethod
    def prompt_templates(sentinel: str) -> dict[str, list[str]]:
        """``{call tag: renders of its prompt templates with every field set to sentinel}`` for
        the method's own prompts (none by default: the run's prompt set covers the rest)."""
        return {}

    def snapshot_state(self) -> dict[str, Any]:
        """The memory's state for a snapshot: every attribute but the shared resources."""
        return {k: v for k, v in vars(self).items() if k not in self.resources}

    def load_snapshot_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`snapshot_state` into a fresh memory built with the run's resources."""
        vars(self).update(state)
