"""MemoryOS pinned with a scripted LLM and the real embedder: pairing, segments, heat, eviction."""

import json

import pytest

from baselines.memoryos import MemoryOSMemory, keyword_overlap
from clag.embed import Embedder
from clag.llm.client import LLMClient
from clag.types import Question, Retrieval, Turn
from eval.answer import MemoryOSAnswerer
from tests.scripted_llm import ScriptedBackend

TOPICS = {"puppy": "I walked my puppy Biscuit in the park today.",
          "bread": "We baked sourdough bread with a new starter.",
          "stars": "The telescope showed the rings of Saturn last night."}


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


class Script:
    def __init__(self, continuous=False, summary=None):
        self.continuous = continuous
        self.summary = summary
        self.metas = 0

    def __call__(self, request):
        text = request.prompt or request.messages[-1][1]
        if request.tag == "memoryos_continuity":
            return json.dumps({"continuous": self.continuous})
        if request.tag == "memoryos_meta":
            self.metas += 1
            return f"meta {self.metas}"
        if request.tag == "memoryos_summary":
            if self.summary is not None:
                return self.summary
            topic = next(t for t, sentence in TOPICS.items() if sentence[:20] in text)
            return json.dumps({"summaries": [{"theme": topic, "keywords": [topic],
                                              "content": f"Talk about {TOPICS[topic]}"}]})
        if request.tag in ("memoryos_keywords", "memoryos_page_keywords", "memoryos_query_keywords"):
            topic = next((t for t in TOPICS if t in text.lower()), "misc")
            return json.dumps({"keywords": [topic]})
        if request.tag == "memoryos_profile":
            return json.dumps({"profile": "The user likes dogs.", "user_facts": ["The user has a puppy named Biscuit."]})
        if request.tag == "memoryos_assistant":
            return json.dumps({"assistant_facts": ["I bake bread."]})
        if request.tag == "memoryos_profile_merge":
            return json.dumps({"profile": "merged profile"})
        if request.tag == "answer":
            return json.dumps({"answer": "Biscuit"})
        raise AssertionError(request.tag)


def exchange(n, topic, session="session_1", start=0):
    """n A/B exchanges about one topic."""
    turns = []
    for i in range(n):
        k = start + i
        turns.append(Turn(f"D1:{2 * k + 1}", "Ann", f"{TOPICS[topic]} (part {k})", "1 May 2023", session))
        turns.append(Turn(f"D1:{2 * k + 2}", "Bob", f"Nice! Tell me more about it {k}.", "1 May 2023", session))
    return turns


def build(embedder, turns, script=None, **options):
    backend = ScriptedBackend(script or Script())
    memory = MemoryOSMemory(LLMClient(backend), embedder, **options)
    for turn in turns:
        memory.ingest(turn)
    memory.finalize()
    return memory, backend


def test_pairing_keeps_every_turn_in_exactly_one_page(embedder):
    turns = [Turn("D1:1", "Ann", "a", "t1", "s1"), Turn("D1:2", "Bob", "b", "t1", "s1"),
             Turn("D1:3", "Bob", "b again", "t1", "s1"), Turn("D1:4", "Ann", "a2", "t1", "s1"),
             Turn("D2:1", "Bob", "new session", "t2", "s2"), Turn("D2:2", "Bob", "still me", "t2", "s2"),
             Turn("D2:3", "Ann", "reply", "t2", "s2")]
    memory, _ = build(embedder, turns, Script(summary=json.dumps({"summaries": [
        {"theme": "x", "keywords": ["x"], "content": "small talk"}]})))
    pages = [memory.pages[i].turn_ids for i in sorted(memory.pages)]
    assert pages == [["D1:1", "D1:2"], ["D1:3", "D1:4"], ["D2:1"], ["D2:2", "D2:3"]]
    assert memory.pages[1].dialogue() == "Bob: b again\nAnn: a2"
    assert memory.events["pages"] == 4 and memory.events["dropped_pages"] == 0


def test_capacity_one_processes_each_page_at_once_new_segment_then_merge(embedder):
    memory, backend = build(embedder, exchange(2, "puppy"))
    tags = [r.tag for r in backend.requests]
    assert tags == ["memoryos_meta", "memoryos_summary", "memoryos_keywords", "memoryos_page_keywords",
                    "memoryos_continuity", "memoryos_meta", "memoryos_summary"]
    assert len(memory.segments) == 1 and memory.segments[0].pages == [0, 1]
    assert memory.events == {**memory.events, "new_segments": 1, "merged": 1}
    assert not memory.short_term
    # interactions: 1 at creation, +1 credited to the best segment... which did not exist yet; +1 on merge
    assert memory.segments[0].l_interaction == 2
    assert memory.segments[0].heat == pytest.approx(0.8 * 2 + 1e-4)


def test_a_different_topic_opens_a_segment_and_the_reference_credits_the_best_one(embedder):
    memory, _ = build(embedder, exchange(1, "puppy") + exchange(1, "stars", start=1))
    assert len(memory.segments) == 2
    assert memory.segments[0].l_interaction == 2      # its own page + the credit for the new one
    assert memory.segments[1].l_interaction == 1
    fixed, _ = build(embedder, exchange(1, "puppy") + exchange(1, "stars", start=1), credit_best_segment=False)
    assert fixed.segments[0].l_interaction == 1


def test_heat_promotes_the_hottest_segment_to_long_term_and_resets_it(embedder):
    memory, backend = build(embedder, exchange(6, "puppy"))
    assert memory.events["profile_updates"] == 0                 # 0.8 × 6 = 4.8 < 5.0
    memory.ingest(exchange(1, "puppy", start=6)[0])
    memory.ingest(exchange(1, "puppy", start=6)[1])              # 7th page: 0.8 × 7 = 5.6
    assert memory.events["profile_updates"] == 1
    assert memory.profile == "The user likes dogs."
    assert [f for f, _ in memory.user_facts] == ["The user has a puppy named Biscuit."]
    assert list(memory.assistant_facts) == ["I bake bread."]
    segment = memory.segments[0]
    assert segment.heat == 0.0 and segment.l_interaction == 0 and segment.n_visit == 0
    assert all(memory.pages[i].analyzed for i in segment.pages)
    for turn in exchange(7, "puppy", start=7):
        memory.ingest(turn)
    assert memory.events["profile_updates"] == 2 and memory.profile == "merged profile"
    tags = [r.tag for r in backend.requests]
    assert tags.count("memoryos_profile_merge") == 1 and tags.count("memoryos_profile") == 2


def test_over_capacity_the_least_used_segment_is_evicted(embedder):
    turns = exchange(1, "puppy") + exchange(1, "bread", start=1) + exchange(1, "stars", start=2)
    memory, _ = build(embedder, turns, mid_term_capacity=2)
    assert sorted(memory.segments) == [1, 2] and memory.events["evicted_segments"] == 1


def test_unparsable_summary_keeps_the_pages_unless_reproducing_the_loss(embedder):
    kept, _ = build(embedder, exchange(2, "puppy"), Script(summary="not json"))
    assert kept.events["unsummarised"] == 2 and sum(len(s.pages) for s in kept.segments.values()) == 2
    lost, _ = build(embedder, exchange(2, "puppy"), Script(summary="not json"), drop_unsummarised=True)
    assert lost.events["dropped_pages"] == 2 and not lost.segments


def test_continuous_pages_are_chained_and_share_the_updated_meta_summary(embedder):
    memory, _ = build(embedder, exchange(3, "puppy"), Script(continuous=True))
    assert [memory.pages[i].previous for i in range(3)] == [None, 0, 1]
    assert [memory.pages[i].meta_info for i in range(3)] == ["meta 3"] * 3


def test_retrieval_finds_matching_pages_raises_visits_and_reports_turn_ids(embedder):
    turns = exchange(7, "puppy") + exchange(1, "stars", start=7)
    memory, backend = build(embedder, turns)
    before = len(backend.requests)
    retrieval = memory.retrieve(Question("q", "What is the name of Ann's puppy?", "Biscuit", 4))
    assert [r.tag for r in backend.requests[before:]] == ["memoryos_query_keywords"]
    assert retrieval.turn_ids[0].startswith("D1:") and len(retrieval.turn_ids) <= 20
    assert 0 in retrieval.debug["segments_matched"]
    assert memory.segments[0].n_visit == 1 and memory.segments[0].access_frequency == 1
    assert "【Historical Memory】 Ann: I walked my puppy" in retrieval.context
    assert "Ann has a puppy named Biscuit." in retrieval.context        # "user" → speaker A
    assert retrieval.debug["speakers"] == ["Ann", "Bob"]


def test_larger_short_term_evicts_one_page_per_addition_and_shows_the_rest(embedder):
    memory, backend = build(embedder, exchange(3, "puppy"), short_term_capacity=3)
    assert len(memory.short_term) == 2 and [r.tag for r in backend.requests].count("memoryos_summary") == 1
    retrieval = memory.retrieve(Question("q", "Where did Ann walk?", "park", 4))
    assert retrieval.turn_ids[-4:] == ["D1:3", "D1:4", "D1:5", "D1:6"]
    assert "Recent conversation between Ann and Bob:\nAnn: I walked" in retrieval.context


def test_keyword_overlap_is_the_reference_s_top():
    assert keyword_overlap(["a", "b"], ["b", "c", "d"]) == pytest.approx(0.5 * (1 / 2 + 1 / 3))
    assert keyword_overlap([], ["a"]) == 0.0


def test_answerer_role_plays_speaker_b_and_adds_list_format_for_list_questions():
    backend = ScriptedBackend(Script())
    answerer = MemoryOSAnswerer(LLMClient(backend))
    retrieval = Retrieval(["D1:1"], "<CONTEXT>memory</CONTEXT>", {"speakers": ["Ann", "Bob"],
                                                                  "assistant_knowledge": ["I bake bread."]})
    answer = answerer(Question("q", "Name the pets?", "Biscuit", 6), retrieval)
    assert answer.text == "Biscuit"
    (role_s, system), (role_u, user) = backend.requests[0].messages
    assert role_s == "system" and "You play Bob, talking with Ann" in system and "- I bake bread." in system
    assert user.startswith("<CONTEXT>memory") and "item1 ; item2" in user
    answerer(Question("q2", "Name the pet?", "Biscuit", 1), retrieval)
    assert "item1 ; item2" not in backend.requests[1].messages[1][1]
