"""GAM (General Agentic Memory): a memorizer that abstracts pages, a researcher that searches them.

Follows GAM's paper code (``research/gam_research``, baselines.md §3):

* **Memorizer** — the stream is cut into pages; each page keeps its raw text and gets ONE
  abstract from the LLM, written with all earlier abstracts as context (failure: the page's
  first 200 characters, as the reference does).
* **Researcher** — per question, up to ``max_iters`` rounds of: plan (tools + queries) → search
  with BM25 (``keyword``), dense (``vector``, per query top-k with scores summed per page) and
  direct reads (``page_index``) → deduplicate by page keeping the best score → integrate the
  hits into a running summary → check whether it is enough → if not, write follow-up requests
  that become the next round's request. The summary is the context of the paper's answer step.

Page unit. LoCoMo: one page per session, as the reference (a session is the episode its
dialogue header and date describe). HotpotQA and BioASQ streams have no sessions; the
reference's HotpotQA script cuts long context into ~2,000-token chunks, so a page here closes
at a session change or before it would exceed ``max_page_words`` words (1,500 ≈ 2,000 tokens),
never splitting a turn.

Prompt-length rule for small models (the reference can put 15 full sessions into one prompt):
the integrate step gets at most ``evidence_budget_words`` words of evidence. Pages keep their
score order; when they do not all fit, each page gets an equal share of what is left and keeps
the turns most similar to the question (MiniLM cosine), shown in page order with gaps marked.
The plan prompt lists at most ``plan_pages`` abstracts (the ones closest to the request, in page
order) and the memorizer sees the last ``memory_context_pages`` abstracts. With the defaults a
LoCoMo conversation's abstracts are always listed in full.

Retrieval for evidence metrics: the turns the integrate step was shown, in the order they were
first shown (round, then score). Tools: rank-bm25 Okapi with Lucene's idf and k1 = 0.9, b = 0.4
instead of Pyserini; all-MiniLM-L6-v2 instead of bge-m3 (offline), with a page vector = the normalised
mean of its turns' vectors because MiniLM reads only 256 tokens of a text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from rank_bm25 import BM25Okapi

from baselines import gam_prompts as prompts
from baselines.rag import bm25_tokens
from clag.embed import Embedder
from clag.index import VectorIndex
from clag.llm.client import LLMClient
from clag.llm.types import Completion, Request
from clag.types import MemorySystem, Question, Retrieval, Turn

STRUCTURED_OUTPUT = ("schema", "text")
PAGE_FORMATS = ("auto", "dialogue", "document")
#: characters of a page kept as its abstract when the memorizer's output is unusable (reference)
FALLBACK_ABSTRACT_CHARS = 200


def word_count(text: str) -> int:
    return len(text.split())


class LuceneBM25(BM25Okapi):
    """Okapi BM25 with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)), as Pyserini scores.

    rank-bm25's own idf turns negative for a term in more than half of the documents (floored to
    a small epsilon), so with GAM's few, long pages common query terms would match nothing.
    """

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
        self.average_idf = sum(self.idf.values()) / max(len(self.idf), 1)


@dataclass
class Page:
    """A unit of raw memory: its header, one line per turn, and its abstract."""

    index: int
    header: str
    turn_ids: tuple[str, ...]
    lines: tuple[str, ...]
    vectors: np.ndarray                 # one unit vector per line
    abstract: str = ""

    @property
    def content(self) -> str:
        return self.header + "\n\n" + "\n".join(self.lines)

    @property
    def vector(self) -> np.ndarray:
        mean = self.vectors.mean(axis=0)
        return mean / max(float(np.linalg.norm(mean)), 1e-12)


@dataclass
class Hit:
    page: int
    score: float
    source: str


@dataclass
class ResearchState:
    """The running summary (the reference's ``Result``) and what the integrate step was shown."""

    content: str = ""
    sources: list[str] = field(default_factory=list)
    shown_turns: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GAMOptions:
    """GAM's options (configs/method/gam.yaml): the constructor's schema, checked once here."""

    max_iters: int = 3
    keyword_top_k: int = 5
    vector_top_k: int = 5
    max_page_index: int = 5
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    max_page_words: int = 1500
    page_format: str = "auto"
    memory_temperature: float = 0.3
    memory_max_tokens: int = 256
    research_temperature: float = 0.3
    research_max_tokens: int = 2048
    structured_output: str = "schema"
    memory_context_pages: int = 40
    plan_pages: int = 40
    evidence_budget_words: int = 1500

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUT:
            raise ValueError(f"structured_output must be one of {STRUCTURED_OUTPUT}, "
                             f"not {self.structured_output!r}")
        if self.page_format not in PAGE_FORMATS:
            raise ValueError(f"page_format must be one of {PAGE_FORMATS}, not {self.page_format!r}")
        if self.max_iters < 1 or self.max_page_words < 1 or self.evidence_budget_words < 1:
            raise ValueError("max_iters, max_page_words and evidence_budget_words must be positive")


class GAMMemory(MemorySystem):
    #: retrieval reads memory only, so a stream's questions may run concurrently
    concurrent_reads = True
    #: its templates for the health report's placeholder list
    prompt_templates = staticmethod(prompts.template_renders)

    #: the constructor's schema: the YAML file's keys, checked once into ``self.options``
    options_class: ClassVar[type[GAMOptions]] = GAMOptions

    def __init__(self, llm: LLMClient, embedder: Embedder, **options: Any) -> None:
        self.options = self.options_class(**options)
        self._schemas = self.options.structured_output == "schema"     # JSON schemas on the calls
        self.llm = llm
        self.embedder = embedder
        self.pages: list[Page] = []
        self._buffer: list[Turn] = []
        self._bm25: LuceneBM25 | None = None
        self._index: VectorIndex | None = None
        self._indexed = 0
        self._rounds: list[int] = []
        self._memorize_failures = 0

    # ---- memorizer ----------------------------------------------------------------------------

    def ingest(self, turn: Turn) -> None:
        if self._buffer and (turn.session != self._buffer[-1].session or
                             sum(word_count(t.text) for t in self._buffer) + word_count(turn.text)
                             > self.options.max_page_words):
            self._close_page()
        self._buffer.append(turn)

    def finalize(self) -> None:
        if self._buffer:
            self._close_page()
        self._build_indexes()

    def _dialogue(self, turns: Sequence[Turn]) -> bool:
        if self.options.page_format != "auto":
            return self.options.page_format == "dialogue"
        return len({t.speaker for t in turns}) > 1

    def _close_page(self) -> None:
        turns, self._buffer = self._buffer, []
        index = len(self.pages)
        if self._dialogue(turns):
            header = (f"=== SESSION {index + 1} - Dialogue Time(available to answer questions): "
                      f"{turns[0].timestamp} ===")
            lines = tuple(f"{t.speaker} ({t.id}): {t.text}" for t in turns)
        else:
            header = f"[Session {index + 1}]"
            lines = tuple(t.text for t in turns)
        page = Page(index, header, tuple(t.id for t in turns), lines,
                    self.embedder.encode([t.text for t in turns]))
        page.abstract = self._memorize(page)
        self.pages.append(page)

    def _request(self, prompt: str, schema: dict[str, Any], tag: str, temperature: float,
                 max_tokens: int) -> Request:
        if self.options.structured_output == "schema":
            return Request(prompt=prompt, json_schema=schema, temperature=temperature,
                           max_tokens=max_tokens, tag=tag)
        return Request(prompt=prompt, parse_schema=schema, temperature=temperature,
                       max_tokens=max_tokens, tag=tag)

    def _memorize(self, page: Page) -> str:
        context_pages = self.options.memory_context_pages
        earlier = self.pages[-context_pages:] if context_pages > 0 else []
        context = "\n".join(f"Page {p.index}: {p.abstract}" for p in earlier)
        as_json = self.options.structured_output == "schema"
        prompt = prompts.memorize_prompt(page.content, context, as_json=as_json)
        if as_json:
            request = Request(prompt=prompt, json_schema=prompts.memorize_schema(), tag="gam_memorize",
                              temperature=self.options.memory_temperature,
                              max_tokens=self.options.memory_max_tokens)
        else:   # the reference's memorizer answers in plain text
            request = Request(prompt=prompt, tag="gam_memorize", temperature=self.options.memory_temperature,
                              max_tokens=self.options.memory_max_tokens)
        completion = self.llm.generate([request])[0]
        if as_json:
            value = (completion.parsed or {}).get("abstract")
            abstract = value.strip() if isinstance(value, str) else ""
        else:
            abstract = completion.text.strip()
        if not abstract or completion.finish_reason == "error":
            self._memorize_failures += 1
            abstract = page.content[:FALLBACK_ABSTRACT_CHARS]
        return abstract

    def _build_indexes(self) -> None:
        if self._indexed == len(self.pages):
            return
        if self.pages:
            tokenized = [bm25_tokens(p.content) for p in self.pages]
            self._bm25 = LuceneBM25(tokenized, k1=self.options.bm25_k1, b=self.options.bm25_b)
            self._index = VectorIndex(self.embedder.dim, "cosine")
            self._index.add(range(len(self.pages)), np.stack([p.vector for p in self.pages]))
        self._indexed = len(self.pages)

    # ---- researcher: tools ----------------------------------------------------------------------

    def keyword_search(self, query: str, top_k: int) -> list[Hit]:
        """BM25 over page text; like Lucene, pages that match no query term are not hits."""
        if self._bm25 is None or not bm25_tokens(query):
            return []
        scores = np.asarray(self._bm25.get_scores(bm25_tokens(query)))
        order = np.lexsort((np.arange(len(scores)), -scores))
        return [Hit(int(i), float(scores[i]), "keyword") for i in order[:top_k] if scores[i] > 0]

    def vector_search(self, queries: Sequence[str], top_k: int) -> list[Hit]:
        """Each query searched alone; a page's scores are summed over queries; the best top_k."""
        if self._index is None or not queries:
            return []
        summed: dict[int, float] = {}
        for vector in self.embedder.encode(list(queries)):
            ids, scores = self._index.search(vector, top_k)
            for page, score in zip(ids, scores):
                summed[page] = summed.get(page, 0.0) + float(score)
        ranked = sorted(summed, key=lambda p: (-summed[p], p))[:top_k]
        return [Hit(p, summed[p], "vector") for p in ranked]

    def page_reads(self, indices: Sequence[int]) -> list[Hit]:
        """Direct reads; numbers that name no page (invented ones) are skipped. Score 0, as in GAM."""
        valid = [i for i in dict.fromkeys(indices) if 0 <= i < len(self.pages)]
        return [Hit(i, 0.0, "page_index") for i in valid[:self.options.max_page_index]]

    def search(self, plan: dict[str, list[Any]]) -> list[Hit]:
        hits: list[Hit] = []
        if "keyword" in plan["tools"] and plan["keyword_collection"]:
            hits += self.keyword_search(" ".join(plan["keyword_collection"]), self.options.keyword_top_k)
        if "vector" in plan["tools"] and plan["vector_queries"]:
            hits += self.vector_search(plan["vector_queries"], self.options.vector_top_k)
        if "page_index" in plan["tools"] and plan["page_index"]:
            hits += self.page_reads(plan["page_index"])
        best: dict[int, Hit] = {}
        for hit in hits:
            if hit.page not in best or hit.score > best[hit.page].score:
                best[hit.page] = hit
        return sorted(best.values(), key=lambda h: -h.score)     # stable: ties keep tool order

    # ---- researcher: prompts ------------------------------------------------------------------

    def _plan_memory(self, request: str) -> str:
        pages = self.pages
        if len(pages) > self.options.plan_pages and self._index is not None:
            ids, _ = self._index.search(self.embedder.encode_one(request), self.options.plan_pages)
            pages = [self.pages[i] for i in sorted(ids)]
        return "\n".join(f"Page {p.index}: {p.abstract}" for p in pages)

    def plan(self, request: str) -> dict[str, list[Any]]:
        completion = self._ask(prompts.plan_prompt(request, self._plan_memory(request)),
                               prompts.plan_schema(self.options.structured_output == "schema"), "gam_plan")
        data = completion.parsed or {}     # unparsable → the reference's empty plan

        def strings(key: str) -> list[str]:
            value = data.get(key)
            return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []

        pages = data.get("page_index")
        return {
            "info_needs": strings("info_needs"),
            "tools": [t for t in strings("tools") if t in prompts.TOOLS],
            "keyword_collection": strings("keyword_collection"),
            "vector_queries": strings("vector_queries"),
            "page_index": [p for p in pages if isinstance(p, int) and not isinstance(p, bool)]
            if isinstance(pages, list) else [],
        }

    def evidence(self, hits: Sequence[Hit], question: str) -> tuple[str, list[str]]:
        """The integrate step's evidence under the word budget, and the turns it shows."""
        pages = [self.pages[h.page] for h in hits]
        total = sum(word_count(line) for p in pages for line in p.lines)
        query = self.embedder.encode_one(question) if total > self.options.evidence_budget_words else None
        remaining = self.options.evidence_budget_words
        blocks: list[str] = []
        shown: list[str] = []
        for n, (hit, page) in enumerate(zip(hits, pages)):
            keep = list(range(len(page.lines)))
            if query is not None:
                keep = self._fit(page, query, remaining // (len(pages) - n))
            remaining -= sum(word_count(page.lines[i]) for i in keep)
            body = [page.header]
            for previous, i in zip([-1, *keep], keep):
                if i != previous + 1:
                    body.append("…")
                body.append(page.lines[i])
            if keep and keep[-1] != len(page.lines) - 1:
                body.append("…")
            blocks.append(f"{n + 1}. [{hit.source}]({page.index}) " + "\n".join(body))
            shown += [page.turn_ids[i] for i in keep]
        return "\n".join(blocks), shown

    @staticmethod
    def _fit(page: Page, query: np.ndarray, share: int) -> list[int]:
        """The page's lines most similar to the query that fit ``share`` words (at least one)."""
        order = np.argsort(-(page.vectors @ query), kind="stable")
        keep: list[int] = []
        used = 0
        for i in order.tolist():
            words = word_count(page.lines[i])
            if keep and used + words > share:
                continue
            keep.append(i)
            used += words
        return sorted(keep)

    def integrate(self, question: str, hits: Sequence[Hit], state: ResearchState) -> ResearchState:
        evidence, shown = self.evidence(hits, question)
        completion = self._ask(prompts.integrate_prompt(question, evidence, state.content),
                               prompts.integrate_schema(self._schemas), "gam_integrate")
        shown_turns = state.shown_turns + [t for t in shown if t not in state.shown_turns]
        data = completion.parsed or {}
        content = data.get("content")
        if not isinstance(content, str):      # unusable → the summary stays as it was
            return ResearchState(state.content, state.sources, shown_turns)
        cited = [str(s) for s in data.get("sources") or [] if s is not None] \
            if isinstance(data.get("sources"), list) else []
        return ResearchState(content, cited or [str(h.page) for h in hits], shown_turns)

    def enough(self, request: str, state: ResearchState) -> bool:
        completion = self._ask(prompts.info_check_prompt(request, state.content),
                               prompts.info_check_schema(), "gam_check")
        return (completion.parsed or {}).get("enough") is True

    def follow_ups(self, request: str, state: ResearchState) -> list[str]:
        completion = self._ask(prompts.follow_up_prompt(request, state.content),
                               prompts.follow_up_schema(self._schemas), "gam_follow_up")
        value = (completion.parsed or {}).get("new_requests")
        return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []

    def _ask(self, prompt: str, schema: dict[str, Any], tag: str) -> Completion:
        request = self._request(prompt, schema, tag, self.options.research_temperature,
                                self.options.research_max_tokens)
        return self.llm.generate([request])[0]

    # ---- the research loop ----------------------------------------------------------------------

    def research(self, question: str) -> tuple[ResearchState, list[dict[str, Any]]]:
        self._build_indexes()
        state = ResearchState()
        request = question
        trace: list[dict[str, Any]] = []
        for step in range(self.options.max_iters):
            plan = self.plan(request)
            hits = self.search(plan)
            if hits:
                state = self.integrate(question, hits, state)
            done = self.enough(question, state)
            record: dict[str, Any] = {"step": step, "request": request, "plan": plan,
                                      "hits": [[h.page, round(h.score, 4), h.source] for h in hits],
                                      "summary_words": word_count(state.content), "enough": done}
            trace.append(record)
            if done:
                break
            new_requests = self.follow_ups(question, state)
            record["new_requests"] = new_requests
            request = " ".join(new_requests) or question
        return state, trace

    def retrieve(self, question: Question) -> Retrieval:
        state, trace = self.research(question.text)
        self._rounds.append(len(trace))
        # the turns are the lines each page showed, in page and stream order: not a ranking
        return Retrieval(list(state.shown_turns), state.content,
                         {"rounds": len(trace), "sources": state.sources, "trace": trace}, ranked=False)

    def stats(self) -> dict[str, Any]:
        words = [sum(word_count(line) for line in p.lines) for p in self.pages]
        rounds = self._rounds
        return {
            "pages": len(self.pages),
            "page_words_mean": round(float(np.mean(words)), 1) if words else 0.0,
            "page_words_max": max(words, default=0),
            "memorize_fallbacks": self._memorize_failures,
            "research_rounds": {str(r): rounds.count(r) for r in sorted(set(rounds))},
        }

