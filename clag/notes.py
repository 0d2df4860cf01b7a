"""A-mem's note machinery, shared by A-mem and CLAG: notes, analysis, evolution, answer context.

Follows the paper-reproduction A-mem (``WujiangXu/A-mem`` ``memory_layer.py``), which CLAG's
``CLAG_memory.py`` extends:
- each turn becomes a :class:`MemoryNote`; an LLM call writes its keywords, context and tags
  (on an unparsable reply: no keywords, context "General", no tags);
- an evolution call sees the note and its k = 5 nearest neighbours and may *strengthen*
  (link the note to neighbours by their global insertion position, replace its tags) and/or
  *update_neighbor* (rewrite the neighbours' contexts and tags in order); an unparsable reply
  means no evolution;
- the note's global document is embedded once, at insertion;
- at question time an LLM call turns the question into comma-separated keywords, which are the
  retrieval query; each retrieved note is followed in the answer context by its linked notes.
Links are positions the LLM chose; invalid ones are skipped when read, as the reference does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from clag.embed import Embedder
from clag.index import VectorIndex
from clag.llm.client import LLMClient
from clag.llm.types import Request
from clag.prompt_sets import OwnPrompts, PromptSet
from clag.prompts import (
    analysis_schema,
    evolution_schema,
    keywords_schema,
    neighbour_line,
)
from clag.types import MemorySystem, Question, Retrieval, Turn

#: what the global index embeds for a note, by reference version (baselines.md §2.2)
GLOBAL_DOC_FORMATS = ("repo_2025_07", "paper_2025_05")


@dataclass
class MemoryNote:
    content: str
    timestamp: str
    source_turn_ids: tuple[str, ...]
    keywords: list[str] = field(default_factory=list)
    context: str = "General"
    tags: list[str] = field(default_factory=list)
    links: list[Any] = field(default_factory=list)
    cluster_id: str | None = None

    def global_doc(self, style: str = "repo_2025_07") -> str:
        """The global retriever's document (embedded once, at insertion)."""
        if style == "paper_2025_05":
            return self.context + " keywords: " + ", ".join(self.keywords)
        return (f"content:{self.content} context:{self.context} keywords: {', '.join(self.keywords)}"
                f" tags: {', '.join(self.tags)}")

    def cluster_doc(self) -> str:
        """Cluster retrievers, centroids at consolidation, A-mem's consolidated global index."""
        return f"{self.content} , {self.context} {' '.join(self.keywords)} {' '.join(self.tags)}"

    def routing_text(self) -> str:
        """Initial K-Means, routing a new note, a new cluster's first centroid."""
        return f"{self.content} {self.context} {' '.join(self.keywords + self.tags)}"

    def context_line(self, separator: str = "\t") -> str:
        """One note in the answer context (CLAG separates fields with tabs, A-mem does not)."""
        return (f"talk start time:{self.timestamp}{separator}memory content: {self.content}{separator}"
                f"memory context: {self.context}{separator}memory keywords: {self.keywords}{separator}"
                f"memory tags: {self.tags}\n")


def _as_str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


@dataclass(frozen=True)
class NoteOptions:
    """The note machinery's options, shared by A-mem and CLAG: the constructor's schema, checked
    once here. The defaults are CLAG's reference values (``baselines.amem.AMemOptions`` changes
    A-mem's three); the method YAML files state every value again so that a run's
    ``config.yaml`` records it, and ``tests/test_method_options.py`` keeps the two equal.

    ``link_limit`` caps the linked notes appended per retrieved note (CLAG's reference loop
    admits k = 10, A-mem's k + 1). ``keyword_separator="cosmos"`` is A-mem's prompt typo.
    """

    evolution_k: int = 5
    retrieve_k: int = 10
    evo_threshold: int = 100
    bounded_schemas: bool = True
    global_doc_format: str = "repo_2025_07"
    keyword_separator: str = "commas"
    link_limit: int = 10
    context_separator: str = "\t"
    max_tokens: int = 1000
    #: under constrained decoding the schema's key order is the order the model writes in
    evolution_key_order: str = "project"

    def __post_init__(self) -> None:
        if self.global_doc_format not in GLOBAL_DOC_FORMATS:
            raise ValueError(f"global_doc_format must be one of {GLOBAL_DOC_FORMATS}")
        if self.evolution_key_order not in ("project", "reference"):
            raise ValueError("evolution_key_order must be project or reference")


class NoteMemory(MemorySystem):
    """A-mem's ingest/retrieve cycle; CLAG overrides the neighbour search, commit and search steps.

    The constructor takes the run's shared resources by name (``embedder``, ``llm``, ``prompts``,
    the dataset's ``content_format``) and the method's options as keywords, which
    :attr:`options_class` checks once into ``self.options``.
    """

    #: retrieval reads memory only (keywords, search, context), so questions may run concurrently
    concurrent_reads = True
    #: the options a subclass adds (CLAG's clusters) extend this class
    options_class: ClassVar[type[NoteOptions]] = NoteOptions

    def __init__(self, embedder: Embedder, llm: LLMClient, prompts: PromptSet | None = None,
                 content_format: str = "reference", **options: Any) -> None:
        self.options = self.options_class(**options)
        #: the wording of every call (own or the reference's templates: clag.prompt_sets)
        self.prompts: PromptSet = prompts or OwnPrompts()
        self.embedder = embedder
        self.llm = llm
        self.content_format = content_format
        self.notes: list[MemoryNote] = []
        self.global_index = VectorIndex(embedder.dim, "cosine")
        self.evo_cnt = 0
        self.evolution_log: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ LLM calls

    def ask(self, prompt: str, schema: dict[str, Any], tag: str, temperature: float = 0.7
            ) -> tuple[dict[str, Any] | None, str]:
        """One structured LLM call: (parsed reply or None, raw text). Public: CLAG's router and
        retrieval ask through it (``clag.clustered.Ask``)."""
        completion = self.llm.generate([Request(prompt=prompt, json_schema=schema, temperature=temperature,
                                                max_tokens=self.options.max_tokens, tag=tag)])[0]
        return completion.parsed, completion.text

    def analyze(self, content: str) -> tuple[list[str], str, list[str]]:
        parsed = self.llm.generate([self._analysis_request(content)])[0].parsed
        if parsed is None:
            return [], "General", []
        context = parsed.get("context")
        if isinstance(context, list):  # the reference joins a list context
            context = " ".join(str(c) for c in context)
        return (_as_str_list(parsed.get("keywords")), context if isinstance(context, str) and context
                else "General", _as_str_list(parsed.get("tags")))

    def prefetch(self, turns: Sequence[Turn]) -> None:
        """Batch every turn's analysis call before the sequential part of ingestion."""
        contents = [turn.memory_content(self.content_format) for turn in turns]
        self.llm.prefetch([self._analysis_request(content) for content in contents])

    def _analysis_request(self, content: str) -> Request:
        return Request(prompt=self.prompts.analysis(content),
                       json_schema=analysis_schema(self.options.bounded_schemas), temperature=0.7,
                       max_tokens=self.options.max_tokens, tag="note")

    def make_note(self, turn: Turn) -> MemoryNote:
        content = turn.memory_content(self.content_format)
        keywords, context, tags = self.analyze(content)
        return MemoryNote(content, turn.timestamp, (turn.id,), keywords, context, tags)

    def evolve(self, note: MemoryNote, neighbours: list[int]) -> bool:
        """One evolution call; applies strengthen / update_neighbor; True when the note evolved."""
        block = "".join(neighbour_line(i, self.notes[i].timestamp, self.notes[i].content,
                                       self.notes[i].context, self.notes[i].keywords, self.notes[i].tags)
                        for i in neighbours)
        prompt = self.prompts.evolution(note.context, note.content, note.keywords, block, len(neighbours))
        schema = evolution_schema(self.options.bounded_schemas, self.options.evolution_key_order)
        parsed, _ = self.ask(prompt, schema, "evolve")
        decision: dict[str, Any] = {"note": len(self.notes), "neighbours": list(neighbours),
                                    "parsed": parsed is not None}
        if parsed is None or parsed.get("should_evolve") is not True:
            decision["evolved"] = False
            self.evolution_log.append(decision)
            return False
        actions = _as_str_list(parsed.get("actions"))
        for action in actions:
            if action == "strengthen":
                connections = parsed.get("suggested_connections")
                note.links.extend(connections if isinstance(connections, list) else [])
                note.tags = _as_str_list(parsed.get("tags_to_update"))
            elif action == "update_neighbor":
                new_tags = parsed.get("new_tags_neighborhood")
                new_contexts = parsed.get("new_context_neighborhood")
                new_tags = new_tags if isinstance(new_tags, list) else []
                new_contexts = new_contexts if isinstance(new_contexts, list) else []
                for i in range(min(len(neighbours), len(new_tags))):
                    neighbour = self.notes[neighbours[i]]
                    neighbour.tags = _as_str_list(new_tags[i])
                    if i < len(new_contexts) and isinstance(new_contexts[i], str):
                        neighbour.context = new_contexts[i]
        decision.update(evolved=True, actions=actions)
        self.evolution_log.append(decision)
        return True

    def query_keywords(self, question: str) -> str:
        """The retrieval query: the keyword string, or the raw reply when it does not parse."""
        parsed, raw = self.ask(self.prompts.query_keywords(question, self.options.keyword_separator),
                                 keywords_schema(self.options.bounded_schemas), "keywords")
        if parsed is not None and isinstance(parsed.get("keywords"), str):
            return parsed["keywords"]
        return raw.strip()

    # ------------------------------------------------------------------ ingest

    def global_neighbours(self, query: str, k: int) -> list[int]:
        ids, _ = self.global_index.search(self.embedder.encode_one(query), k)
        return ids

    def neighbours_for(self, note: MemoryNote) -> list[int]:
        """A-mem: the k nearest notes in the global index (CLAG searches the routed cluster)."""
        return self.global_neighbours(note.content, self.options.evolution_k) if self.notes else []

    def insert(self, note: MemoryNote) -> int:
        position = len(self.notes)
        self.notes.append(note)
        document = note.global_doc(self.options.global_doc_format)
        self.global_index.add([position], self.embedder.encode([document]))
        return position

    def ingest(self, turn: Turn) -> None:
        note = self.make_note(turn)
        evolved = self.evolve(note, self.neighbours_for(note))
        self.insert(note)
        if evolved:
            self.evo_cnt += 1
            if self.evo_cnt % self.options.evo_threshold == 0:
                self.consolidate()

    def consolidate(self) -> None:
        """A-mem: re-embed every note's global document in the cluster-doc format."""
        positions = list(range(len(self.notes)))
        self.global_index.replace(positions, self.embedder.encode([n.cluster_doc() for n in self.notes]))

    def finalize(self) -> None:
        """Nothing at end of stream for A-mem."""

    # ------------------------------------------------------------------ retrieve

    def search(self, query: str, query_tags: list[str]) -> tuple[list[int], dict[str, Any]]:
        """A-mem: global top-k for the keyword query."""
        return self.global_neighbours(query, self.options.retrieve_k), {"search_mode": "global",
                                                                 "search_space_size": len(self.notes)}

    def answer_context(self, positions: Sequence[int]) -> str:
        total = len(self.notes)
        parts = []
        for position in positions:
            note = self.notes[position]
            parts.append(note.context_line(self.options.context_separator))
            added = 0
            for link in note.links:
                try:
                    index = int(link)
                except (TypeError, ValueError):
                    continue
                if not 0 <= index < total:
                    continue
                parts.append(self.notes[index].context_line(self.options.context_separator))
                added += 1
                if added >= self.options.link_limit:
                    break
        return "".join(parts)

    def retrieve(self, question: Question) -> Retrieval:
        if not self.notes:
            return Retrieval([], "", {"search_mode": "empty"})
        query = self.query_keywords(question.text)
        query_tags = [t.strip() for t in query.split(",") if t.strip()]
        positions, debug = self.search(query, query_tags)
        turn_ids: list[str] = []
        for position in positions:
            for turn_id in self.notes[position].source_turn_ids:
                if turn_id not in turn_ids:
                    turn_ids.append(turn_id)
        debug.update(query_keywords=query, total_memories=len(self.notes), retrieved_positions=positions)
        return Retrieval(turn_ids, self.answer_context(positions), debug)

    def stats(self) -> dict[str, Any]:
        evolved = sum(1 for d in self.evolution_log if d.get("evolved"))
        links = sum(len(n.links) for n in self.notes)
        return {"memories": len(self.notes), "evolutions": evolved,
                "evolution_parse_failures": sum(1 for d in self.evolution_log if not d["parsed"]),
                "links": links}
