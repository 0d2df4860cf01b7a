"""The openai backend against a fake OpenAI-compatible server on loopback."""

import socket

import pytest

from clag.llm.decoding import DecodingPolicy
from clag.llm.openai_backend import OpenAIBackend
from clag.llm.types import Request
from tests.loopback_server import LoopbackServer


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_chat_endpoint_sends_the_schema_and_reads_usage(server):
    backend = OpenAIBackend(server.url, "m")
    out = backend.generate([Request(messages=(("user", "hi"),), json_schema=SCHEMA, temperature=0.5, seed=3, tag="answer")])[0]
    assert out.text == '{"answer": "chat"}' and out.prompt_tokens == 7 and out.completion_tokens == 3
    body = server.bodies[0]
    assert server.paths[0] == "/v1/chat/completions"
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["seed"] == 3
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_completions_endpoint_sends_the_raw_prompt_and_reports_truncation(server):
    backend = OpenAIBackend(server.url, "m", concurrency=4)
    outs = backend.generate([Request(prompt=f"p{i}", temperature=0) for i in range(6)])
    assert [o.text for o in outs] == ['{"answer": "raw"}'] * 6 and outs[0].finish_reason == "length"
    assert sorted(b["prompt"] for b in server.bodies) == [f"p{i}" for i in range(6)]


def test_server_errors_are_retried():
    server = LoopbackServer(fail_first=2)
    try:
        backend = OpenAIBackend(server.url, "m", retries=3)
        assert backend.generate([Request(prompt="hi", temperature=0)])[0].text == '{"answer": "raw"}'
        assert len(server.bodies) == 3
    finally:
        server.close()


def test_an_unreachable_server_gives_error_completions_naming_it_after_bounded_retries():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIBackend(url, "m", retries=2, timeout_s=2)
    out = backend.generate([Request(prompt="hi", temperature=0)])[0]
    assert out.finish_reason == "error" and out.text == ""
    assert out.extra["error"].startswith(f"LLM server at {url} failed after 2 attempt(s)")


def test_messages_always_go_to_the_chat_endpoint_even_under_raw_prompts(server):
    """MemoryOS's chat request: rendered by the server's template (thinking off), as hf renders it,
    never newline-joined into a raw prompt."""
    backend = OpenAIBackend(server.url, "m")
    backend.generate([Request(messages=(("system", "s"), ("user", "u")), temperature=0)])
    assert server.paths == ["/v1/chat/completions"]
    assert server.bodies[0]["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert server.bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}


def test_the_policy_sampling_filters_are_sent_explicitly(server):
    backend = OpenAIBackend(server.url, "m", policy=DecodingPolicy(top_p=0.9, top_k=20, min_p=0.05,
                                                                   stop_token_ids=(7, 9)))
    backend.generate([Request(prompt="p", temperature=0.7, seed=5)])
    neutral = OpenAIBackend(server.url, "m")
    neutral.generate([Request(prompt="p", temperature=0.7, seed=5)])
    tuned, default = server.bodies
    assert (tuned["top_p"], tuned["top_k"], tuned["min_p"], tuned["stop_token_ids"]) == (0.9, 20, 0.05, [7, 9])
    # neutral, as the paper's SGLang path; -1 is "no top-k" on vLLM, SGLang and llama.cpp's server
    assert (default["top_p"], default["top_k"], default["min_p"], default["repetition_penalty"]) == (1.0, -1, 0.0, 1.0)
    assert "stop_token_ids" not in default and "chat_template_kwargs" not in default


def test_completions_endpoint_sends_the_schema_in_the_body(server):
    backend = OpenAIBackend(server.url, "m", policy=DecodingPolicy(repetition_penalty=1.1))
    backend.generate([Request(prompt="p", json_schema=SCHEMA, temperature=0)])
    body = server.bodies[0]
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA and body["repetition_penalty"] == 1.1


def test_the_llamacpp_dialect_sends_our_grammar_and_llamacpp_names(server):
    """llama-server reads neither response_format on completions nor repetition_penalty: the
    dialect sends the in-process backend's GBNF grammar, repeat_penalty and its seed default."""
    from clag.llm.gbnf import schema_to_gbnf

    policy = DecodingPolicy(repetition_penalty=1.1, max_whitespace=16)
    backend = OpenAIBackend(server.url, "m", policy=policy, dialect="llamacpp", model_id="llama-server:x",
                            context_tokens=2048)
    closed = {**SCHEMA, "additionalProperties": False}
    backend.generate([Request(prompt="p", json_schema=closed, temperature=0)])
    backend.generate([Request(prompt="p", json_schema=SCHEMA, temperature=0)])   # outside our converter
    body, other = server.bodies
    assert body["grammar"] == schema_to_gbnf(closed, 16) and other["json_schema"] == SCHEMA
    assert "response_format" not in body and "repetition_penalty" not in body
    assert (body["repeat_penalty"], body["seed"], body["cache_prompt"]) == (1.1, 0, True)
    assert body["repeat_last_n"] == 2048        # the slot's context: the policy's whole sequence
    assert backend.model_id == "llama-server:x"
    with pytest.raises(Exception, match="stop token ids"):
        OpenAIBackend(server.url, "m", policy=DecodingPolicy(stop_token_ids=(3,)), dialect="llamacpp")


def test_the_cache_identity_names_the_engine_serving_the_model_and_its_revision():
    """A vLLM run must not reuse an SGLang run's replies: the engine (the model list's owned_by)
    and the config's pinned revision are part of the model id; a server without a list says so."""
    from clag.llm.models import model_id_for

    ids = []
    for engine in ("vllm", "sglang"):
        server = LoopbackServer(models=["m"], engine=engine)
        try:
            cfg = {"name": "m", "backend": "openai", "model": "m", "base_url": server.url,
                   "revision": "abc123"}
            ids.append(model_id_for(cfg))
            assert OpenAIBackend(server.url, "m").model_id.split(":")[2] == engine
        finally:
            server.close()
    assert ids[0] != ids[1] and ids[0].startswith("openai:m@abc123:vllm:") and ":sglang:" in ids[1]
    unlisted = LoopbackServer()
    try:
        assert OpenAIBackend(unlisted.url, "m").model_id.startswith("openai:m@unpinned:unlisted:")
    finally:
        unlisted.close()


def test_one_request_budget_per_server_for_the_whole_process_and_timeouts_start_at_sending():
    """Four call sites (threads, as streams are) with concurrency 2 each used to put 8 requests at
    once on a server that answers one at a time, and the queued ones timed out while they waited
    there. One budget of 2 for the process: at most 2 in flight, none waits past its timeout."""
    import threading

    server = LoopbackServer(serve_s=0.3, serial=True)
    try:
        backends = [OpenAIBackend(server.url, "m", concurrency=2, timeout_s=1.0, retries=1) for _ in range(4)]
        outcomes: list[str] = []

        def call_site(backend: OpenAIBackend) -> None:
            done = backend.generate([Request(prompt=f"p{i}", temperature=0.0) for i in range(3)])
            outcomes.extend(c.finish_reason for c in done)

        threads = [threading.Thread(target=call_site, args=(b,)) for b in backends]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.close()
    # the client side holds at most 2; the server counts a request until its handler returns, a
    # moment after the client already has the reply and may send the next (so +1, never the old 9)
    assert backends[0].budget.peak == 2 and server.peak <= 3
    assert outcomes.count("error") == 0 and len(outcomes) == 12
