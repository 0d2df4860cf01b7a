import sqlite3
import warnings

import pytest

from clag.llm.cache import RequestCache
from clag.llm.client import LLMClient
from clag.llm.jsonout import extract_json
from clag.llm.types import Request
from tests.scripted_llm import ScriptedBackend

SCHEMA = {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                                           "context": {"type": "string"}},
          "required": ["keywords", "context"]}


def test_a_rerun_is_served_from_the_cache(tmp_path):
    backend = ScriptedBackend(lambda r: '{"keywords": ["a"], "context": "c"}')
    first = LLMClient(backend, cache=RequestCache(tmp_path / "c.sqlite"))
    requests = [Request(prompt=f"p{i}", json_schema=SCHEMA, temperature=0.7, tag="note") for i in range(3)]
    out1 = first.generate(requests)
    second = LLMClient(backend, cache=RequestCache(tmp_path / "c.sqlite"))
    out2 = second.generate(requests)
    assert len(backend.requests) == 3                       # the rerun made no backend call
    assert [c.text for c in out1] == [c.text for c in out2]
    assert all(c.cached for c in out2) and out2[0].parsed == {"keywords": ["a"], "context": "c"}
    assert second.ledger.to_dict()["by_tag"]["note"]["cache_hits"] == 3
    assert first.ledger.to_dict()["by_tag"]["note"]["prompt_tokens"] == 3


def test_sampled_calls_get_reproducible_distinct_seeds():
    backend = ScriptedBackend(lambda r: "x")
    client = LLMClient(backend, run_seed=7)
    same = Request(prompt="p", temperature=0.7)
    client.generate([same, same, Request(prompt="p", temperature=0.0)])
    seeds = [r.seed for r in backend.requests]
    assert seeds[0] is not None and seeds[0] != seeds[1] and seeds[2] is None
    again = ScriptedBackend(lambda r: "x")
    LLMClient(again, run_seed=7).generate([same, same])
    assert [r.seed for r in again.requests] == seeds[:2]
    other = ScriptedBackend(lambda r: "x")
    LLMClient(other, run_seed=8).generate([same])
    assert other.requests[0].seed != seeds[0]


def test_failures_are_counted_by_tag_and_leave_the_fallback_to_the_caller():
    replies = iter(['no json here', '{"keywords": ["a", "b", "c"], "context": "c"}', '{"keywords": [], "context": "ok"}'])
    client = LLMClient(ScriptedBackend(lambda r: next(replies)))
    req = Request(prompt="p", json_schema=SCHEMA, temperature=0, tag="evolve")
    completion = client.generate([req])[0]
    assert completion.parsed is None and completion.parse_error
    client.generate([req, req])
    stats = client.ledger.to_dict()["by_tag"]["evolve"]
    assert stats["calls"] == 3 and stats["parse_failures"] == 1 and stats["schema_violations"] == 1


def test_truncation_is_counted():
    client = LLMClient(ScriptedBackend(lambda r: '{"keywords": ["a"', finish_reason="length"))
    client.generate([Request(prompt="p", json_schema=SCHEMA, temperature=0, tag="note")])
    stats = client.ledger.to_dict()["by_tag"]["note"]
    assert stats["truncated"] == 1 and stats["parse_failures"] == 1


def test_reference_json_extraction():
    assert extract_json('Sure! {"a": 1} done') == {"a": 1}


def test_request_needs_exactly_one_of_prompt_or_messages():
    with pytest.raises(ValueError):
        Request()
    with pytest.raises(ValueError):
        Request(prompt="p", messages=(("user", "p"),))


def test_a_corrupted_cache_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = RequestCache(path)
    assert any("corrupted" in str(w.message) for w in caught)
    assert list(tmp_path.glob("c.sqlite.corrupt-*"))
    assert cache.get("missing") is None
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM completions").fetchone() == (0,)


def test_the_ledger_counts_calls_by_phase_from_the_scope():
    from clag.llm.client import LLMClient
    from clag.llm.types import Request
    from tests.scripted_llm import ScriptedBackend

    client = LLMClient(ScriptedBackend(lambda r: "x"))
    with client.scope("ingest:s1"):
        client.generate([Request(prompt="a", tag="note"), Request(prompt="b", tag="evolve")])
    with client.scope("question:s1:q1"):
        client.generate([Request(prompt="c", tag="answer")])
    client.generate([Request(prompt="d", tag="answer")])           # outside any scope: by tag only
    report = client.ledger.to_dict()
    assert {phase: counts["calls"] for phase, counts in report["by_phase"].items()} == {"ingest": 2, "question": 1}
    assert report["total"]["calls"] == 4


def test_an_interrupted_prefetch_keeps_every_chunk_that_returned(tmp_path):
    """Ctrl-C during a long prefetch loses at most the chunk in flight, not the whole prefetch."""
    from clag.llm.cache import RequestCache
    from tests.scripted_llm import ScriptedBackend

    class Interrupted(ScriptedBackend):
        def generate(self, requests):
            if len(self.batches) == 2:
                raise KeyboardInterrupt
            return super().generate(requests)

    cache = RequestCache(tmp_path / "c.sqlite")
    client = LLMClient(Interrupted(lambda r: "{}"), cache=cache)
    client.prefetch_chunk = 10
    with pytest.raises(KeyboardInterrupt):
        client.prefetch([Request(prompt=f"p{i}", temperature=0, tag="note") for i in range(35)])
    fresh = LLMClient(ScriptedBackend(lambda r: "{}"), cache=cache)
    out = fresh.generate([Request(prompt=f"p{i}", temperature=0, tag="note") for i in range(35)])
    assert sum(c.cached for c in out) == 20


def test_a_one_at_a_time_backend_caches_each_prefetched_reply_as_it_comes(tmp_path):
    """An in-process llama.cpp model decodes a chunk request by request, so prefetch sends them one
    by one: a stop loses the request in flight, not the chunk (half an hour of note analyses)."""
    from clag.llm.cache import RequestCache
    from tests.scripted_llm import ScriptedBackend

    class Interrupted(ScriptedBackend):
        def generate(self, requests):
            if sum(len(b) for b in self.batches) >= 7:
                raise KeyboardInterrupt
            return super().generate(requests)

    requests = [Request(prompt=f"p{i}", temperature=0, tag="note") for i in range(20)]
    cache = RequestCache(tmp_path / "c.sqlite")
    client = LLMClient(Interrupted(lambda r: "{}"), cache=cache)
    client.decodes_one_at_a_time = True
    with pytest.raises(KeyboardInterrupt):
        client.prefetch(requests)
    assert [len(b) for b in client.backend.batches] == [1] * 7
    fresh = LLMClient(ScriptedBackend(lambda r: "{}"), cache=cache)
    assert sum(c.cached for c in fresh.generate(requests)) == 7


def test_one_at_a_time_prefetch_sends_the_same_requests_in_the_same_order():
    """The switch changes only how the requests are grouped: seeds, order and replies are the same."""
    from tests.scripted_llm import ScriptedBackend

    requests = [Request(prompt=f"p{i % 4}", temperature=0.7, tag="note") for i in range(10)]
    sent = {}
    for one_by_one in (False, True):
        client = LLMClient(ScriptedBackend(lambda r: f"reply to {r.prompt} {r.seed}"))
        client.decodes_one_at_a_time = one_by_one
        client.prefetch(requests)
        replies = [c.text for c in client.generate(requests)]
        sent[one_by_one] = ([(r.prompt, r.seed) for b in client.backend.batches for r in b], replies)
    assert sent[False] == sent[True]


def test_only_the_in_process_llamacpp_backend_decodes_one_at_a_time():
    from clag.llm.models import backend_kind

    in_process = {"backend": "llamacpp", "server": None}
    served = {"backend": "llamacpp", "server": "auto"}
    assert backend_kind(in_process).decodes_one_at_a_time(in_process)
    assert not backend_kind(served).decodes_one_at_a_time(served)
    assert not backend_kind({"backend": "openai"}).decodes_one_at_a_time({"backend": "openai"})
    assert not backend_kind({"backend": "hf"}).decodes_one_at_a_time({"backend": "hf"})
