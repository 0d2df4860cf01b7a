"""GAM pinned with a scripted LLM and the real embedder: pages, memorizer, research rounds, stopping."""

import json

import pytest

from baselines.gam import GAMMemory
from clag.embed import Embedder
from clag.llm.client import LLMClient
from clag.types import Question, Turn
from tests.scripted_llm import ScriptedBackend

TOPICS = ["I adopted a puppy named Biscuit from the shelter.",
          "My sister runs marathons and trains every morning.",
          "We baked sourdough bread with a new starter.",
          "The telescope showed the rings of Saturn last night."]


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def dialogue(sessions=3, per_session=4):
    turns = []
    for s in range(sessions):
        for i in range(per_session):
            speaker = "Ann" if i % 2 == 0 else "Bob"
            turns.append(Turn(f"D{s + 1}:{i + 1}", speaker, f"{TOPICS[s % 4]} (remark {i})",
                              f"{s + 1} May 2023", f"session_{s + 1}"))
    return turns


def plan(**fields):
    base = {"info_needs": [], "tools": [], "keyword_collection": [], "vector_queries": [], "page_index": []}
    return json.dumps({**base, **fields})


class Script:
    """Replies by tag; the research replies can be changed per test."""

    def __init__(self, plan_reply=None, enough=lambda n: False, follow_ups=("who is Biscuit",), integrate=None):
        self.plan_reply = plan_reply or plan(tools=["keyword"], keyword_collection=["puppy Biscuit"])
        self.enough = enough
        self.follow_ups = list(follow_ups)
        self.integrate = integrate
        self.checks = 0

    def __call__(self, request):
        if request.tag == "gam_memorize":
            first = request.prompt.split("INPUT_MESSAGE:\n", 1)[1].split("\n")[2]
            return json.dumps({"abstract": f"Abstract: {first[:60]}"})
        if request.tag == "gam_plan":
            return self.plan_reply(request) if callable(self.plan_reply) else self.plan_reply
        if request.tag == "gam_integrate":
            if self.integrate is not None:
                return self.integrate
            return json.dumps({"content": f"summary after {request.prompt.count('[keyword]')} keyword hits",
                               "sources": ["0"]})
        if request.tag == "gam_check":
            self.checks += 1
            return json.dumps({"enough": self.enough(self.checks)})
        if request.tag == "gam_follow_up":
            return json.dumps({"new_requests": self.follow_ups})
        raise AssertionError(request.tag)


def build(embedder, script=None, turns=None, **options):
    script = script or Script()
    backend = ScriptedBackend(script)
    memory = GAMMemory(LLMClient(backend), embedder, **options)
    for turn in turns if turns is not None else dialogue():
        memory.ingest(turn)
    memory.finalize()
    return memory, backend


def question(text="What is the name of Ann's puppy?"):
    return Question("q1", text, "Biscuit", 4, ("D1:1",))


def test_one_page_and_one_memorize_call_per_session_with_earlier_abstracts_as_context(embedder):
    memory, backend = build(embedder)
    assert [r.tag for r in backend.requests] == ["gam_memorize"] * 3
    assert [p.turn_ids for p in memory.pages][1] == ("D2:1", "D2:2", "D2:3", "D2:4")
    assert memory.pages[0].header.startswith("=== SESSION 1 - Dialogue Time(available to answer questions): 1 May")
    assert "Ann (D1:1): I adopted a puppy" in memory.pages[0].content
    second_prompt = backend.requests[1].prompt
    assert "Page 0: Abstract: Ann (D1:1): I adopted" in second_prompt
    assert "Page 1:" not in second_prompt                    # only earlier pages
    assert memory.pages[2].abstract.startswith("Abstract: Ann (D3:1)")


def test_session_less_streams_are_paged_by_words_without_splitting_a_turn(embedder):
    turns = [Turn(f"0:{i}", "System", f"{TOPICS[i % 4]} Sentence {i}.", "2020", "session_0") for i in range(10)]
    memory, _ = build(embedder, turns=turns, max_page_words=25)
    sizes = [len(p.turn_ids) for p in memory.pages]
    assert sum(sizes) == 10 and all(s >= 1 for s in sizes)
    assert all(sum(len(line.split()) for line in p.lines) <= 25 for p in memory.pages)
    assert memory.pages[0].header == "[Session 1]" and memory.pages[0].lines[0].startswith("I adopted")


def test_unusable_abstract_falls_back_to_the_page_start_and_is_counted(embedder):
    script = Script()
    backend = ScriptedBackend(lambda r: "no json here" if r.tag == "gam_memorize" else script(r))
    memory = GAMMemory(LLMClient(backend), embedder)
    for turn in dialogue(sessions=1):
        memory.ingest(turn)
    memory.finalize()
    assert memory.pages[0].abstract == memory.pages[0].content[:200]
    assert memory.stats()["memorize_fallbacks"] == 1


def test_research_stops_when_the_check_says_enough(embedder):
    memory, backend = build(embedder, Script(enough=lambda n: True))
    start = len(backend.requests)
    retrieval = memory.retrieve(question())
    assert [r.tag for r in backend.requests[start:]] == ["gam_plan", "gam_integrate", "gam_check"]
    assert retrieval.debug["rounds"] == 1
    assert retrieval.context == "summary after 1 keyword hits"
    assert retrieval.turn_ids[:4] == ["D1:1", "D1:2", "D1:3", "D1:4"]      # the BM25 hit: session 1


def test_research_runs_max_iters_rounds_and_follow_ups_become_the_next_request(embedder):
    memory, backend = build(embedder, Script(follow_ups=["Where was Biscuit adopted?", "When?"]))
    start = len(backend.requests)
    retrieval = memory.retrieve(question())
    tags = [r.tag for r in backend.requests[start:]]
    assert tags == ["gam_plan", "gam_integrate", "gam_check", "gam_follow_up"] * 3
    plans = [r.prompt for r in backend.requests[start:] if r.tag == "gam_plan"]
    assert "REQUEST:\nWhat is the name of Ann's puppy?" in plans[0]
    assert "REQUEST:\nWhere was Biscuit adopted? When?" in plans[1]
    assert retrieval.debug["trace"][1]["request"] == "Where was Biscuit adopted? When?"
    assert memory.stats()["research_rounds"] == {"3": 1}


def test_empty_follow_ups_fall_back_to_the_question(embedder):
    memory, backend = build(embedder, Script(enough=lambda n: n >= 2, follow_ups=()))
    start = len(backend.requests)
    memory.retrieve(question())
    plans = [r.prompt for r in backend.requests[start:] if r.tag == "gam_plan"]
    assert len(plans) == 2 and "REQUEST:\nWhat is the name of Ann's puppy?" in plans[1]


def test_a_plan_without_hits_skips_integration_and_keeps_the_summary(embedder):
    memory, backend = build(embedder, Script(plan_reply=plan(tools=["page_index"], page_index=[99]),
                                             enough=lambda n: True))
    start = len(backend.requests)
    retrieval = memory.retrieve(question())
    assert [r.tag for r in backend.requests[start:]] == ["gam_plan", "gam_check"]
    assert retrieval.context == "" and retrieval.turn_ids == []


def test_unparsable_integration_keeps_the_previous_summary(embedder):
    memory, _ = build(embedder, Script(integrate="garbage", enough=lambda n: True))
    retrieval = memory.retrieve(question())
    assert retrieval.context == ""
    assert retrieval.turn_ids                       # what the integrate step was shown still counts


def test_tools_dedupe_pages_keeping_the_best_score_and_skip_invented_page_numbers(embedder):
    memory, _ = build(embedder)
    hits = memory.search({"tools": ["keyword", "vector", "page_index"], "keyword_collection": ["sourdough"],
                          "vector_queries": ["baking bread", "a starter"], "page_index": [2, 7, -1, 2],
                          "info_needs": []})
    pages = [h.page for h in hits]
    assert len(pages) == len(set(pages)) == 3
    keyword = memory.keyword_search("sourdough", 5)
    vector = memory.vector_search(["baking bread", "a starter"], 5)
    best = max([h for h in keyword + vector if h.page == 2], key=lambda h: h.score)
    assert hits[0].page == 2 and (hits[0].score, hits[0].source) == (best.score, best.source)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    reads = memory.page_reads([2, 7, -1, 2])
    assert [h.page for h in reads] == [2] and reads[0].score == 0.0
    assert vector[0].page == 2 and 0 < vector[0].score <= 2.0      # summed over the two queries


def test_keyword_search_returns_only_pages_that_match_a_term(embedder):
    memory, _ = build(embedder)
    assert [h.page for h in memory.keyword_search("telescope", 5)] == []    # session 4's topic: absent
    assert [h.page for h in memory.keyword_search("marathons", 5)] == [1]
    assert len(memory.keyword_search("remark", 5)) == 3       # in every page: Lucene's idf stays positive


def test_evidence_over_budget_keeps_the_turns_closest_to_the_question(embedder):
    memory, backend = build(embedder, Script(plan_reply=plan(tools=["page_index"], page_index=[0, 1]),
                                             enough=lambda n: True), evidence_budget_words=30)
    start = len(backend.requests)
    retrieval = memory.retrieve(question("Which puppy did Ann adopt from the shelter?"))
    shown_words = sum(len(line.split()) for p in memory.pages[:2] for tid, line in zip(p.turn_ids, p.lines)
                      if tid in retrieval.turn_ids)
    assert shown_words <= 30 and 1 <= len(retrieval.turn_ids) < 8
    assert retrieval.turn_ids[0].startswith("D1:")
    integrate = next(r.prompt for r in backend.requests[start:] if r.tag == "gam_integrate")
    assert "…" in integrate and "1. [page_index](0)" in integrate and "2. [page_index](1)" in integrate


def test_plan_lists_only_the_closest_abstracts_when_there_are_too_many(embedder):
    memory, backend = build(embedder, Script(enough=lambda n: True), turns=dialogue(sessions=4), plan_pages=2)
    start = len(backend.requests)
    memory.retrieve(question("Which planet's rings did the telescope show?"))
    plan_prompt = backend.requests[start].prompt
    assert plan_prompt.count("\nPage ") == 2 and "Page 3:" in plan_prompt


def test_text_mode_parses_json_after_a_think_block_without_constraining(embedder):
    def reply(request):
        assert request.json_schema is None
        if request.tag == "gam_memorize":
            return "A plain abstract."
        if request.tag == "gam_plan":
            return "<think>maybe {not json}</think>" + plan(tools=["keyword"], keyword_collection=["puppy"])
        return Script(enough=lambda n: True)(request)

    backend = ScriptedBackend(reply)
    client = LLMClient(backend)
    memory = GAMMemory(client, embedder, structured_output="text")
    for turn in dialogue(sessions=1):
        memory.ingest(turn)
    memory.finalize()
    assert memory.pages[0].abstract == "A plain abstract."
    retrieval = memory.retrieve(question())
    assert retrieval.context.startswith("summary after 1")
    assert client.ledger.to_dict()["by_tag"]["gam_plan"].get("parse_failures", 0) == 0


def test_bad_options_are_refused(embedder):
    with pytest.raises(ValueError, match="structured_output"):
        GAMMemory(LLMClient(ScriptedBackend(lambda r: "")), embedder, structured_output="yaml")
