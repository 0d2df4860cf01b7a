"""The hf backend with the real offline model (SmolLM2-135M): structured calls parse, batches work."""

from dataclasses import replace

import pytest

from clag.llm.client import LLMClient
from clag.llm.models import build_backend, packaged_model_path
from clag.llm.types import Request
from clag.types import Question, Retrieval
from eval.answer import PaperAnswerer

CFG = {"name": "smollm2-135m", "backend": "hf", "model": "smollm2-135m",
       "device": "cpu", "dtype": "auto", "batch_size": 4}

CONTEXT = ("talk start time:8 May 2023\tmemory content: Speaker Carolinesays : I went to the LGBTQ support "
           "group on 7 May 2023.\ntalk start time:8 May 2023\tmemory content: Speaker Melaniesays : I painted "
           "a sunrise over the lake last year.\n")


@pytest.fixture(scope="module")
def backend():
    return build_backend(CFG)


def test_packaged_model_is_verified():
    path = packaged_model_path("smollm2-135m")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size == 98_362_432


def test_every_answer_prompt_parses_under_its_schema_in_one_batch(backend):
    client = LLMClient(backend)
    answerer = PaperAnswerer(client)
    questions = [Question("a", "When did Caroline go to the support group?", "7 May 2023", 2),
                 Question("b", "What did Melanie paint?", "a sunrise", 4),
                 Question("c", "Did Melanie paint a portrait?", "Yes", 5),
                 Question("d", "Which events are mentioned?", "support group ; painting", 6)]
    # greedy: whether a sampled reply of a 135M model finishes its JSON is luck, not the schema
    requests = [replace(answerer.request(q, Retrieval([], CONTEXT)), temperature=0.0) for q in questions]
    completions = client.generate(requests)
    assert all(c.parsed is not None and isinstance(c.parsed["answer"], str) for c in completions), \
        [c.text for c in completions]
    assert client.ledger.to_dict()["total"]["parse_failures"] == 0


def test_greedy_batches_are_deterministic_and_token_counts_are_real(backend):
    requests = [Request(prompt=p, temperature=0, max_tokens=8)
                for p in ("Once upon a time, there was a", "The three primary colours are", "My favourite fruit is")]
    first, second = backend.generate(requests), backend.generate(requests)
    assert [c.text for c in first] == [c.text for c in second]
    assert [c.prompt_tokens for c in first] == [8, 5, 4]   # the real token counts, padding excluded
    assert all(c.completion_tokens == 8 and c.finish_reason == "length" for c in first)


def test_sampling_with_the_same_seed_repeats(backend):
    request = Request(prompt="Write a word about the sea:", temperature=1.0, max_tokens=6, seed=123)
    assert backend.generate([request])[0].text == backend.generate([request])[0].text


def test_max_tokens_stops_generation_and_says_so(backend):
    out = backend.generate([Request(prompt="Count from one to fifty: one, two,", temperature=0, max_tokens=4)])[0]
    assert out.completion_tokens == 4 and out.finish_reason == "length"


def test_chat_messages_get_the_template_and_a_raw_prompt_stays_raw(backend):
    from clag.llm.hf import HFBackend

    assert isinstance(backend, HFBackend)
    rendered = backend.render(Request(messages=(("user", "Hi"),)))
    assert "<|im_start|>user" in rendered and rendered.rstrip().endswith("assistant")
    assert backend.render(Request(prompt="Hi")) == "Hi"


def test_a_prompt_longer_than_the_context_keeps_its_end_and_is_counted(backend):
    client = LLMClient(backend)
    saved = backend.max_context
    backend.max_context = 40
    try:
        long_prompt = "filler words " * 200 + "Question: the capital of France is"
        out = client.generate([Request(prompt=long_prompt, temperature=0, max_tokens=8, tag="answer")])[0]
    finally:
        backend.max_context = saved
    assert out.prompt_tokens == 32 and out.extra == {"prompt_truncated": True}
    assert client.ledger.to_dict()["by_tag"]["answer"]["prompts_truncated"] == 1


def test_a_sampled_request_does_not_depend_on_its_batch(backend):
    """Per-row generators: the same request and seed give the same text alone, as [a, b] and as
    [c, a, b] (transformers' one RNG per batch gave three different texts)."""
    a = Request(prompt="Write one sentence about the sea:", temperature=0.7, max_tokens=24, seed=11)
    b = Request(prompt="List three colours:", temperature=0.7, max_tokens=24, seed=12)
    c = Request(prompt="Tell me a fact about Paris, the capital of France, and its river:", temperature=0.7,
                max_tokens=24, seed=13)
    alone = [backend.generate([r])[0].text for r in (a, b, c)]
    pair = [x.text for x in backend.generate([a, b])]
    triple = [x.text for x in backend.generate([c, a, b])]
    assert pair == alone[:2]
    assert triple == [alone[2], alone[0], alone[1]]
    assert len(set(alone)) == 3


def test_stop_ids_come_from_the_generation_config(backend):
    # SmolLM2's generation config ends on its end-of-turn token (the converted tokenizer's own
    # eos differs between transformers 4 and 5: the generation config is the one rule)
    assert backend.tokenizer.convert_ids_to_tokens(list(backend.stop_token_ids)) == ["<|im_end|>"]
    assert set(backend.stop_token_ids) == {backend.model.generation_config.eos_token_id}
    report = backend.sampling_report(Request(prompt="p", temperature=0.7, seed=1))
    assert report["stop_token_ids"] == list(backend.stop_token_ids)
    assert (report["top_p"], report["top_k"], report["min_p"]) == (1.0, 0, 0.0)
