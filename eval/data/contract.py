"""The dataset container every loader returns, and the subset selection applied to it.

The records themselves (:class:`~clag.types.Turn`, :class:`~clag.types.Question`,
:class:`~clag.types.Sample`) live in :mod:`clag.types` because memory systems consume them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from clag.types import Question, Sample, Turn

__all__ = ["Dataset", "Question", "Sample", "Turn", "select"]


@dataclass
class Dataset:
    """A loaded benchmark: its streams, what loading had to fix, and the files it came from."""

    name: str
    samples: list[Sample]
    #: counts of what the loader cleaned, dropped or cast (reported, never silent)
    report: Counter = field(default_factory=Counter)
    #: relative path → sha256 of every file read
    files: dict[str, str] = field(default_factory=dict)

    @property
    def num_turns(self) -> int:
        return sum(len(s.turns) for s in self.samples)

    @property
    def num_questions(self) -> int:
        return sum(len(s.questions) for s in self.samples)

    def category_counts(self) -> dict[int, int]:
        counts = Counter(q.category for s in self.samples for q in s.questions)
        return dict(sorted(counts.items()))

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "samples": len(self.samples),
            "sample_ids": [s.id for s in self.samples],
            "turns": self.num_turns,
            "questions": self.num_questions,
            "categories": self.category_counts(),
            "report": dict(sorted(self.report.items())),
            "files": dict(self.files),
        }

    def to_records(self) -> list[dict[str, Any]]:
        """The samples exactly as memory systems see them, as plain JSON-ready dicts."""
        return [sample_to_record(s) for s in self.samples]


def sample_to_record(sample: Sample) -> dict[str, Any]:
    return {
        "id": sample.id,
        "turns": [
            {"id": t.id, "speaker": t.speaker, "text": t.text, "timestamp": t.timestamp,
             "session": t.session}
            for t in sample.turns
        ],
        "questions": [
            {"id": q.id, "text": q.text, "answer": q.answer, "category": q.category,
             "evidence": list(q.evidence), "extra": q.extra}
            for q in sample.questions
        ],
    }


def answerable_prefix(sample: Sample, questions: int) -> int:
    """How many leading turns it takes for ``questions`` of the stream's questions to have all
    their evidence inside (every turn, when fewer questions than that have evidence)."""
    ends = _evidence_ends(sample)
    if questions <= 0:
        return 0
    return ends[questions - 1] if len(ends) >= questions else len(sample.turns)


def _evidence_ends(sample: Sample) -> list[int]:
    """For each question with all its evidence in the stream, the number of leading turns that
    holds that evidence; ascending."""
    position = {t.id: i for i, t in enumerate(sample.turns)}
    return sorted(max(position[e] for e in q.evidence) + 1 for q in sample.questions
                  if q.evidence and all(e in position for e in q.evidence))


def select(
    dataset: Dataset,
    *,
    samples: int | None = None,
    questions_per_sample: int | None = None,
    categories: list[int] | None = None,
    sample_ids: list[str] | None = None,
    turns: int | None = None,
    answerable: int | None = None,
    pick: str | None = None,
) -> Dataset:
    """A subset for smoke runs and sweeps.

    ``turns`` keeps only the first N turns of each stream, and then — so the subset stays honest
    — only the questions whose evidence lies entirely inside those turns. ``answerable`` keeps
    the shortest prefix of each stream inside which that many questions have all their evidence
    (BioASQ's and HotpotQA's evidence is spread over hundreds of turns: their first 60 turns
    answer one question or none), and only those questions. ``pick="most_answerable"`` orders
    the streams before ``samples`` takes the first N: most questions answerable inside the kept
    turns first (counting at most ``questions_per_sample``), fewer turns needed on a tie, the
    dataset's order after that. That is how a smoke run answers on every dataset: BioASQ's
    stream 0 answers nothing in its first 16 turns.
    """
    chosen = dataset.samples
    if sample_ids:
        wanted = {str(s) for s in sample_ids}
        chosen = [s for s in chosen if s.id in wanted]
    if pick is not None:
        if pick != "most_answerable":
            raise ValueError(f"unknown subset pick {pick!r}; valid: most_answerable")
        chosen = _most_answerable_first(chosen, turns=turns, answerable=answerable,
                                        questions_per_sample=questions_per_sample)
    if samples is not None:
        chosen = chosen[:samples]
    out: list[Sample] = []
    for sample in chosen:
        qs = sample.questions
        kept_turns = sample.turns
        if answerable is not None:
            kept_turns = kept_turns[:answerable_prefix(sample, answerable)]
        if turns is not None:
            kept_turns = kept_turns[:turns]
        if turns is not None or answerable is not None:
            inside = {t.id for t in kept_turns}
            qs = tuple(q for q in qs if q.evidence and set(q.evidence) <= inside)
        if categories:
            qs = tuple(q for q in qs if q.category in set(categories))
        if questions_per_sample is not None:
            qs = qs[:questions_per_sample]
        out.append(replace(sample, turns=tuple(kept_turns), questions=tuple(qs)))
    return Dataset(dataset.name, out, Counter(dataset.report), dict(dataset.files))


def _answerable_within(sample: Sample, turns: int, cap: int | None) -> tuple[int, int]:
    """How many questions (at most ``cap``) the first ``turns`` turns answer, and how many leading
    turns those questions need."""
    ends = [end for end in _evidence_ends(sample) if end <= turns][:cap]
    return len(ends), (ends[-1] if ends else 0)


def _most_answerable_first(samples: list[Sample], *, turns: int | None, answerable: int | None,
                           questions_per_sample: int | None) -> list[Sample]:
    def kept(sample: Sample) -> int:
        limit = len(sample.turns) if turns is None else min(turns, len(sample.turns))
        if answerable is not None:
            limit = min(limit, answerable_prefix(sample, answerable))
        return limit

    def rank(item: tuple[int, Sample]) -> tuple[int, int, int]:
        position, sample = item
        count, needed = _answerable_within(sample, kept(sample), questions_per_sample)
        return (-count, needed, position)

    return [sample for _, sample in sorted(enumerate(samples), key=rank)]
