"""MemoryOS: short-term pages → mid-term segments with heat → long-term profile and knowledge.

Follows MemoryOS's LoCoMo evaluation code (``eval/``, baselines.md §4) with the thresholds and
weights of that script, not the library's defaults (§4.6):

* **Short-term**: a queue of pages (capacity 1 in the script, so each page moves on at once).
  When the queue is full the oldest page is evicted — one per addition, as the reference's loop
  does (its issue #13).
* **Evicted pages** get a continuity check against the previously evicted page (LLM); a
  continuous page joins its chain and the chain's meta-summary is rewritten (LLM), otherwise a
  fresh meta-summary is written (LLM). Then a multi-topic summary of the evicted pages (LLM,
  ≤ 2 themes); each theme goes to the segment whose summary is most similar when
  ``cosine + keyword overlap ≥ merge_threshold`` (0.6), else opens a new segment (LLM keywords for
  the summary and for each page). Interactions raise the best segment's ``L_interaction`` even
  when a new segment was opened (the reference does; ``credit_best_segment``).
* **Heat** ``= heat_alpha·N_visit + heat_beta·L_interaction + heat_gamma·R_recency`` (0.8/0.8/1e-4).
  After each eviction the hottest segment, if at or above ``heat_threshold`` (5.0) with
  unanalysed pages, is analysed: user profile + user facts (LLM), assistant facts (LLM), profile
  merge (LLM, when a profile exists); its heat is then reset. More than ``mid_term_capacity``
  segments evict the least frequently retrieved one.
* **Retrieval**: the top ``segment_top_k`` segments by summary cosine; query keywords (LLM); a
  segment matches when ``cosine + keyword overlap ≥ segment_threshold`` (0.1); its pages match at
  page cosine ≥ ``page_threshold`` (0.1) (page text = user input + time + response, no
  separators, as the reference embeds it); matched segments get ``N_visit += 1``; the best
  ``retrieval_queue`` (10) pages overall, plus user facts at cosine ≥ ``knowledge_threshold``
  (top ``knowledge_top_k``), the profile and the assistant facts, make the answer context.

Pairing (what replaces the reference's): a page is a turn and, when the next turn of the same
session comes from another speaker, that reply. Every turn lands in exactly one page. The
reference pairs ``speaker_a`` with the following ``speaker_b`` turn, overwrites a reply when
``speaker_b`` speaks twice and drops pages with an empty side (on LoCoMo: 93 pairs dropped, 61
turns overwritten). A page's sides keep their speakers' names. A multi-topic summary that does
not parse keeps its pages as one theme (the page text itself) instead of dropping them
(``drop_unsummarised: true`` reproduces the reference's loss).

Retrieved turn ids: the pages of the retrieval queue, best first, then any short-term pages (they
are shown to the answer step too).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from baselines import memoryos_prompts as prompts
from clag.embed import Embedder
from clag.llm.client import LLMClient
from clag.llm.types import Request
from clag.types import MemorySystem, Question, Retrieval, Turn

STRUCTURED_OUTPUT = ("schema", "text")
SUMMARY_INPUTS = ("user", "both")


@dataclass
class Page:
    """One exchange: an opening turn and, when there is one, the reply to it."""

    id: int
    session: str
    timestamp: str
    user_speaker: str
    user: str
    turn_ids: list[str]
    agent_speaker: str = ""
    agent: str = ""
    meta_info: str = ""
    previous: int | None = None
    next: int | None = None
    keywords: list[str] = field(default_factory=list)
    analyzed: bool = False

    def dialogue(self) -> str:
        lines = [f"{self.user_speaker}: {self.user}"]
        if self.agent_speaker:
            lines.append(f"{self.agent_speaker}: {self.agent}")
        return "\n".join(lines)

    def retrieval_text(self) -> str:
        """What the reference embeds at query time: user input, time, response, no separators."""
        return f"{self.user}{self.timestamp}{self.agent}"


@dataclass
class Segment:
    id: int
    summary: str
    keywords: list[str]
    vector: np.ndarray
    pages: list[int]
    l_interaction: int = 0
    n_visit: int = 0
    r_recency: float = 1.0
    heat: float = 0.0
    access_frequency: int = 0


def keyword_overlap(a: Sequence[str], b: Sequence[str]) -> float:
    """The reference's s_top: ½(|A∩B|/|A| + |A∩B|/|B|), 0 when either set is empty."""
    set_a, set_b = set(a), set(b)
    if not set_a or not set_b:
        return 0.0
    common = len(set_a & set_b)
    return 0.5 * (common / len(set_a) + common / len(set_b))


@dataclass(frozen=True)
class MemoryOSOptions:
    """MemoryOS's options (configs/method/memoryos.yaml): the constructor's schema, checked once here."""

    short_term_capacity: int = 1
    mid_term_capacity: int = 2000
    knowledge_capacity: int = 100
    merge_threshold: float = 0.6
    keyword_weight: float = 1.0
    heat_alpha: float = 0.8
    heat_beta: float = 0.8
    heat_gamma: float = 1e-4
    heat_threshold: float = 5.0
    segment_top_k: int = 5
    segment_threshold: float = 0.1
    page_threshold: float = 0.1
    knowledge_threshold: float = 0.1
    knowledge_top_k: int = 10
    retrieval_queue: int = 10
    summary_input: str = "user"
    credit_best_segment: bool = True
    drop_unsummarised: bool = False
    structured_output: str = "schema"
    temperature: float = 0.3
    max_tokens: int = 1000
    meta_max_tokens: int = 100

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUT:
            raise ValueError(f"structured_output must be one of {STRUCTURED_OUTPUT}, "
                             f"not {self.structured_output!r}")
        if self.summary_input not in SUMMARY_INPUTS:
            raise ValueError(f"summary_input must be one of {SUMMARY_INPUTS}, not {self.summary_input!r}")
        if self.short_term_capacity < 1 or self.mid_term_capacity < 1:
            raise ValueError("short_term_capacity and mid_term_capacity must be at least 1")


class MemoryOSMemory(MemorySystem):
    #: retrieval raises segment visits and access counts, so questions run in order, one at a time
    concurrent_reads = False
    #: its templates (and its answer step's) for the health report's placeholder list
    prompt_templates = staticmethod(prompts.template_renders)

    #: the constructor's schema: the YAML file's keys, checked once into ``self.options``
    options_class: ClassVar[type[MemoryOSOptions]] = MemoryOSOptions

    def __init__(self, llm: LLMClient, embedder: Embedder, **options: Any) -> None:
        self.options = self.options_class(**options)
        self.llm = llm
        self.embedder = embedder

        self.pages: dict[int, Page] = {}
        self.short_term: deque[int] = deque()
        self.segments: dict[int, Segment] = {}
        self.profile = ""
        self.user_facts: deque[tuple[str, np.ndarray]] = deque(maxlen=self.options.knowledge_capacity)
        self.assistant_facts: deque[str] = deque(maxlen=self.options.knowledge_capacity)
        self.speakers: list[str] = []
        self._open: Page | None = None
        self._last_evicted: int | None = None
        self._next_segment = 0
        self.events: dict[str, int] = {"pages": 0, "merged": 0, "new_segments": 0, "evicted_segments": 0,
                                       "profile_updates": 0, "unsummarised": 0, "dropped_pages": 0}

    # ---- LLM calls ----------------------------------------------------------------------------

    def _json(self, prompt: str, schema: dict[str, Any], tag: str, temperature: float | None = None) -> dict:
        kind = "json_schema" if self.options.structured_output == "schema" else "parse_schema"
        request = Request(prompt=prompt, tag=tag, max_tokens=self.options.max_tokens,
                          temperature=self.options.temperature if temperature is None else temperature,
                          **{kind: schema})
        return self.llm.generate([request])[0].parsed or {}

    def _text(self, prompt: str, tag: str, temperature: float, max_tokens: int) -> str:
        request = Request(prompt=prompt, tag=tag, temperature=temperature, max_tokens=max_tokens)
        return self.llm.generate([request])[0].text.strip()

    def _keywords(self, text: str, tag: str) -> list[str]:
        value = self._json(prompts.keywords_prompt(text), prompts.keywords_schema(), tag).get("keywords")
        return [k.strip().lower() for k in value if isinstance(k, str) and k.strip()] \
            if isinstance(value, list) else []

    # ---- pairing and short-term ---------------------------------------------------------------

    def ingest(self, turn: Turn) -> None:
        if turn.speaker not in self.speakers:
            self.speakers.append(turn.speaker)
        page = self._open
        if (page is not None and not page.agent_speaker and turn.speaker != page.user_speaker
                and turn.session == page.session):
            page.agent_speaker, page.agent = turn.speaker, turn.text
            page.turn_ids.append(turn.id)
            self._open = None
            self._add_short_term(page)
            return
        if page is not None:
            self._add_short_term(page)
        self._open = Page(len(self.pages), turn.session, turn.timestamp, turn.speaker, turn.text, [turn.id])
        self.pages[self._open.id] = self._open

    def finalize(self) -> None:
        if self._open is not None:
            self._add_short_term(self._open)
            self._open = None

    def _add_short_term(self, page: Page) -> None:
        self.events["pages"] += 1
        self.short_term.append(page.id)
        if len(self.short_term) >= self.options.short_term_capacity:      # full: evict the oldest, once
            self._process_evicted([self.short_term.popleft()])
            self._maybe_update_long_term()

    # ---- mid-term -------------------------------------------------------------------------------

    def _process_evicted(self, page_ids: list[int]) -> None:
        pages = [self.pages[i] for i in page_ids]
        for page in pages:
            previous = self.pages.get(self._last_evicted) if self._last_evicted is not None else None
            if previous is not None and self._continuous(previous, page):
                page.previous, previous.next = previous.id, page.id
                page.meta_info = self._text(prompts.meta_info_prompt(previous.meta_info, page.dialogue()),
                                            "memoryos_meta", 0.3, self.options.meta_max_tokens)
                for linked in self._chain(page.id):
                    linked.meta_info = page.meta_info
            else:
                page.meta_info = self._text(prompts.meta_info_prompt(None, page.dialogue()),
                                            "memoryos_meta", 0.3, self.options.meta_max_tokens)
            self._last_evicted = page.id
        if self.options.summary_input == "user":
            text = "\n".join(f"{p.user_speaker}: {p.user}\n" for p in pages)
        else:
            text = "\n".join(p.dialogue() + "\n" for p in pages)
        themes = self._themes(text)
        if not themes:
            self.events["unsummarised"] += 1
            if self.options.drop_unsummarised:
                self.events["dropped_pages"] += len(pages)
                return
            themes = [("", [], "\n".join(p.dialogue() for p in pages))]
        for _theme, keywords, summary in themes:
            self._insert(summary, keywords, pages)

    def _continuous(self, previous: Page, current: Page) -> bool:
        as_json = self.options.structured_output == "schema"
        prompt = prompts.continuity_prompt(previous.dialogue(), current.dialogue(), as_json=as_json)
        if as_json:
            return self._json(prompt, prompts.continuity_schema(), "memoryos_continuity", 0.0).get(
                "continuous") is True
        return self._text(prompt, "memoryos_continuity", 0.0, 10).lower() == "true"

    def _chain(self, page_id: int) -> list[Page]:
        """Every page linked to ``page_id`` through previous/next links, itself included."""
        chain = [self.pages[page_id]]
        cursor = self.pages[page_id].previous
        while cursor is not None and cursor in self.pages:
            chain.insert(0, self.pages[cursor])
            cursor = self.pages[cursor].previous
        cursor = self.pages[page_id].next
        while cursor is not None and cursor in self.pages:
            chain.append(self.pages[cursor])
            cursor = self.pages[cursor].next
        return chain

    def _themes(self, text: str) -> list[tuple[str, list[str], str]]:
        data = self._json(prompts.multi_summary_prompt(text), prompts.multi_summary_schema(),
                          "memoryos_summary")
        items = data.get("summaries") if isinstance(data.get("summaries"), list) else []
        themes = []
        for item in items:
            content = item.get("content") if isinstance(item, dict) else None
            if not isinstance(content, str) or not content.strip():
                continue
            raw = item.get("keywords") if isinstance(item.get("keywords"), list) else []
            keywords = [k.strip().lower() for k in raw if isinstance(k, str) and k.strip()]
            themes.append((str(item.get("theme", "")), keywords, content.strip()))
        return themes[:prompts.MAX_THEMES]

    def heat(self, segment: Segment) -> float:
        return (self.options.heat_alpha * segment.n_visit + self.options.heat_beta * segment.l_interaction
                + self.options.heat_gamma * segment.r_recency)

    def _insert(self, summary: str, keywords: list[str], pages: list[Page]) -> None:
        vector = self.embedder.encode_one(summary)
        best: Segment | None = None
        best_similarity = -1.0
        for segment in self.segments.values():
            similarity = float(segment.vector @ vector)
            if similarity > best_similarity:
                best, best_similarity = segment, similarity
        merged = best is not None and best_similarity >= 0 and (
            best_similarity + self.options.keyword_weight * keyword_overlap(best.keywords, keywords)
            >= self.options.merge_threshold)
        if merged:
            assert best is not None
            for page in pages:
                page.keywords = list(keywords)
                if page.id not in best.pages:
                    best.pages.append(page.id)
            self.events["merged"] += 1
        else:
            self._new_segment(summary, vector, pages)
        if best is not None and (merged or self.options.credit_best_segment) and best.id in self.segments:
            best.l_interaction += len(pages)
            best.heat = self.heat(best)

    def _new_segment(self, summary: str, vector: np.ndarray, pages: list[Page]) -> None:
        segment = Segment(self._next_segment, summary, self._keywords(summary, "memoryos_keywords"), vector,
                          [p.id for p in pages], l_interaction=len(pages))
        for page in pages:
            page.keywords = self._keywords(page.dialogue(), "memoryos_page_keywords")
        segment.heat = self.heat(segment)
        self._next_segment += 1
        self.segments[segment.id] = segment
        self.events["new_segments"] += 1
        if len(self.segments) > self.options.mid_term_capacity:
            self._evict_least_used()

    def _evict_least_used(self) -> None:
        victim = min(self.segments.values(), key=lambda s: s.access_frequency)
        for page_id in victim.pages:
            page = self.pages.get(page_id)
            if page is None:
                continue
            if page.previous is not None and page.previous in self.pages:
                self.pages[page.previous].next = page.next
            if page.next is not None and page.next in self.pages:
                self.pages[page.next].previous = page.previous
        del self.segments[victim.id]
        self.events["evicted_segments"] += 1

    # ---- long-term ------------------------------------------------------------------------------

    def _maybe_update_long_term(self) -> None:
        if not self.segments:
            return
        hottest = max(self.segments.values(), key=lambda s: s.heat)   # ties: the oldest segment
        pending = [self.pages[i] for i in hottest.pages if i in self.pages and not self.pages[i].analyzed]
        if hottest.heat < self.options.heat_threshold or not pending:
            return
        dialogue = "\n".join(p.dialogue() for p in pending)
        analysis = self._json(prompts.profile_prompt(dialogue), prompts.profile_schema(), "memoryos_profile")
        new_profile = analysis.get("profile") if isinstance(analysis.get("profile"), str) else ""
        facts = analysis.get("user_facts") if isinstance(analysis.get("user_facts"), list) else []
        assistant = self._json(prompts.assistant_knowledge_prompt(dialogue),
                               prompts.assistant_knowledge_schema(), "memoryos_assistant")
        assistant = assistant.get("assistant_facts")
        if self.profile and new_profile:
            merged = self._json(prompts.profile_merge_prompt(self.profile, new_profile),
                                prompts.profile_merge_schema(), "memoryos_profile_merge").get("profile")
            self.profile = merged if isinstance(merged, str) and merged.strip() else self.profile
        elif new_profile:
            self.profile = new_profile
        user_facts = [f.strip() for f in facts if isinstance(f, str) and f.strip()]
        for fact, vector in zip(user_facts, self.embedder.encode(user_facts)):
            self.user_facts.append((fact, vector))
        for fact in assistant if isinstance(assistant, list) else []:
            if isinstance(fact, str) and fact.strip():
                self.assistant_facts.append(fact.strip())
        for page in pending:
            page.analyzed = True
        hottest.n_visit = hottest.l_interaction = 0
        hottest.r_recency, hottest.heat = 1.0, 0.0
        self.events["profile_updates"] += 1

    # ---- retrieval ------------------------------------------------------------------------------

    def speaker_pair(self) -> tuple[str, str]:
        first = self.speakers[0] if self.speakers else "User"
        return first, self.speakers[1] if len(self.speakers) > 1 else "Assistant"

    def retrieve(self, question: Question) -> Retrieval:
        query = self.embedder.encode_one(question.text)
        query_keywords = self._keywords(question.text, "memoryos_query_keywords")
        segments = sorted(self.segments.values(), key=lambda s: (-float(s.vector @ query), s.id))
        matched: dict[int, float] = {}
        visited = []
        for segment in segments[:self.options.segment_top_k]:
            overall = float(segment.vector @ query) + self.options.keyword_weight * keyword_overlap(
                query_keywords, segment.keywords)
            if overall < self.options.segment_threshold:
                continue
            pages = [self.pages[i] for i in segment.pages if i in self.pages]
            vectors = self.embedder.encode([p.retrieval_text() for p in pages])
            scores = vectors @ query if pages else np.zeros(0)
            threshold = self.options.page_threshold
            hits = [(p.id, float(x)) for p, x in zip(pages, scores) if float(x) >= threshold]
            if hits:
                segment.n_visit += 1
                segment.access_frequency += 1
                segment.heat = self.heat(segment)
                visited.append(segment.id)
                for page_id, similarity in hits:
                    matched[page_id] = max(similarity, matched.get(page_id, -1.0))
        queue = sorted(matched, key=lambda i: (-matched[i], i))[:self.options.retrieval_queue]
        facts = sorted(((float(v @ query), fact) for fact, v in self.user_facts), key=lambda x: -x[0])
        facts = [fact for score, fact in facts
                 if score >= self.options.knowledge_threshold][:self.options.knowledge_top_k]
        speaker_a, speaker_b = self.speaker_pair()
        short = [self.pages[i] for i in self.short_term]
        history = "\n".join(f"{p.dialogue()}\nTime: ({p.timestamp})" for p in short)
        retrieved = "\n".join(
            f"【Historical Memory】 {self.pages[i].dialogue()}\nTime:({self.pages[i].timestamp})\n"
            f"Conversation chain overview:({self.pages[i].meta_info})\n" for i in queue)
        background = f"【User Profile】\n{self.profile or 'None'}\n\n" + "".join(f"{f}\n" for f in facts)
        background = re.sub(r"(?i)\buser\b", speaker_a, background)
        background = re.sub(r"(?i)\bassistant\b", speaker_b, background)
        context = prompts.memory_block(speaker_a, speaker_b, history, retrieved, background)
        shown = [*queue, *self.short_term]
        turn_ids = list(dict.fromkeys(t for i in shown for t in self.pages[i].turn_ids))
        return Retrieval(turn_ids, context, {
            "speakers": [speaker_a, speaker_b], "assistant_knowledge": list(self.assistant_facts),
            "query_keywords": query_keywords, "segments_matched": visited, "pages": queue,
            "facts": len(facts)})

    def stats(self) -> dict[str, Any]:
        sizes = [len(s.pages) for s in self.segments.values()]
        return {**self.events, "segments": len(self.segments), "segment_sizes": sizes,
                "user_facts": len(self.user_facts), "assistant_facts": len(self.assistant_facts),
                "profile_chars": len(self.profile), "short_term": len(self.short_term)}
