"""The decoding policy and its conformance across backends: the same request is rendered, stopped
and sampled the same way by ``hf``, ``llamacpp`` and ``openai``."""

from __future__ import annotations

import json

import pytest

from clag.llm.decoding import DecodingPolicy, render_chat, stop_token_ids, strip_reasoning
from clag.llm.gbnf import schema_to_gbnf
from clag.llm.openai_backend import OpenAIBackend
from clag.llm.types import Request
from tests.loopback_server import LoopbackServer

#: a Qwen3-style template (ChatML; with thinking off the generation prompt carries an empty block)
QWEN3_STYLE_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}")

NOTE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["keywords", "context", "tags"],
               "properties": {"keywords": {"type": "array", "items": {"type": "string", "maxLength": 40},
                                           "maxItems": 8},
                              "context": {"type": "string", "maxLength": 300},
                              "tags": {"type": "array", "items": {"type": "string", "maxLength": 40},
                                       "maxItems": 8}}}

#: how Qwen-family models write JSON unconstrained: 4-space indentation, one item per line
QWEN_NATURAL_JSON = json.dumps({"keywords": ["insulin", "glucose", "pancreas"],
                                "context": "A note about insulin.", "tags": ["biology", "medicine"]}, indent=4)


def test_policy_defaults_are_neutral_and_the_identity_names_every_field():
    policy = DecodingPolicy.from_config({"name": "x", "max_whitespace": None})
    assert (policy.top_p, policy.top_k, policy.min_p, policy.repetition_penalty) == (1.0, 0, 0.0, 1.0)
    assert policy.max_whitespace is None and policy.enable_thinking is False
    variants = [DecodingPolicy(), DecodingPolicy(top_p=0.9), DecodingPolicy(top_k=20), DecodingPolicy(min_p=0.1),
                DecodingPolicy(repetition_penalty=1.1), DecodingPolicy(max_whitespace=4),
                DecodingPolicy(max_whitespace=None), DecodingPolicy(enable_thinking=True),
                DecodingPolicy(stop_token_ids=(5,))]
    assert len({v.identity() for v in variants}) == len(variants)
    with pytest.raises(ValueError, match="top_p"):
        DecodingPolicy(top_p=0)


def test_reasoning_is_stripped_once_and_plain_text_is_untouched():
    assert strip_reasoning("<think>\nplan\n</think>\n\n{\"a\": 1}") == '{"a": 1}'
    assert strip_reasoning("  plain answer ") == "  plain answer "


def test_stop_ids_prefer_the_generation_config_list():
    assert stop_token_ids([151645, 151643], 151643) == (151645, 151643)   # Qwen3 lists two
    assert stop_token_ids(None, 2, extra=(7, 2)) == (2, 7)


def test_the_shared_renderer_equals_transformers_for_a_real_template():
    from transformers import AutoTokenizer

    from clag.llm.hf import convert_gguf
    from clag.llm.models import packaged_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(convert_gguf(packaged_model_path("smollm2-135m"))))
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    ours = render_chat(tokenizer.chat_template, messages, bos_token=tokenizer.bos_token or "",
                       eos_token=tokenizer.eos_token or "")
    theirs = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                           enable_thinking=False)
    assert ours == theirs


def test_thinking_is_off_in_a_qwen3_style_template():
    text = render_chat(QWEN3_STYLE_TEMPLATE, [{"role": "user", "content": "Hi"}])
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert not render_chat(QWEN3_STYLE_TEMPLATE, [{"role": "user", "content": "Hi"}],
                           enable_thinking=True).endswith("</think>\n\n")


def _accepts(grammar, text: str) -> bool:
    import xgrammar as xgr

    return xgr.testing._is_grammar_accept_string(grammar, text)


def test_a_qwen_models_natural_json_is_not_cut_short_by_any_backends_grammar():
    """Cap 4 (the old default) rejects newline + 8 spaces, so the model could only close its
    arrays early (53 of 60 notes had empty keyword lists); the policy's default admits it."""
    import xgrammar as xgr

    default = DecodingPolicy().max_whitespace
    for cap, expected in ((4, False), (default, True), (None, True)):
        hf_grammar = xgr.Grammar.from_json_schema(json.dumps(NOTE_SCHEMA), any_whitespace=True,
                                                  max_whitespace_cnt=cap)
        llamacpp_grammar = xgr.Grammar.from_ebnf(schema_to_gbnf(NOTE_SCHEMA, cap), root_rule_name="root")
        assert _accepts(hf_grammar, QWEN_NATURAL_JSON) is expected, ("hf", cap)
        assert _accepts(llamacpp_grammar, QWEN_NATURAL_JSON) is expected, ("llamacpp", cap)
        assert _accepts(llamacpp_grammar, json.dumps(json.loads(QWEN_NATURAL_JSON))), cap   # compact too


# ---- conformance: one request, three backends ------------------------------------------------

@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory):
    """A random-weight Qwen3-shaped model (2 layers) with a ChatML tokenizer, the Qwen3-style
    template and a generation config listing two end tokens, as Qwen3's does."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    from clag.llm.hf import convert_gguf
    from clag.llm.models import packaged_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(convert_gguf(packaged_model_path("smollm2-135m"))))
    tokenizer.chat_template = QWEN3_STYLE_TEMPLATE
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    eos = [im_end, tokenizer.convert_tokens_to_ids("<|endoftext|>")]
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=2048,
                         eos_token_id=eos, tie_word_embeddings=True)
    model = Qwen3ForCausalLM(config)
    folder = tmp_path_factory.mktemp("tiny-qwen3")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    GenerationConfig(eos_token_id=eos, bos_token_id=None).save_pretrained(folder)
    return folder, eos


POLICY = DecodingPolicy(top_p=0.95, top_k=20, min_p=0.01, max_whitespace=16)
REQUESTS = [Request(prompt="Summarise: the sea is blue.", temperature=0.7, max_tokens=12, seed=3),
            Request(messages=(("system", "Answer briefly."), ("user", "What colour is the sea?")),
                    temperature=0.0, max_tokens=12, json_schema={"type": "object"})]


def test_hf_and_openai_send_the_same_decoding_for_the_same_requests(tiny_qwen3):
    from clag.llm.hf import HFBackend

    folder, eos = tiny_qwen3
    hf = HFBackend(str(folder), label="tiny", device="cpu", policy=POLICY)
    assert list(hf.stop_token_ids) == eos             # both of the generation config's end tokens
    server = LoopbackServer(reply=lambda body: "{}")
    try:
        openai = OpenAIBackend(server.url, "tiny", policy=POLICY)
        openai.generate(REQUESTS)
    finally:
        server.close()
    bodies = sorted(server.bodies, key=lambda b: "messages" in b)
    for request, body in zip(REQUESTS, bodies):
        ours = hf.sampling_report(request)
        sent = {k: body.get(k) for k in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                         "seed", "max_tokens")}
        expected = {k: ours[k] for k in sent}
        expected["top_k"] = ours["top_k"] or -1
        assert sent == expected
        if request.messages is not None:   # the server renders with the same template, thinking off
            assert body["messages"] == request.text_for_chat()
            assert body["chat_template_kwargs"] == {"enable_thinking": False}
            assert ours["prompt"] == render_chat(QWEN3_STYLE_TEMPLATE, request.text_for_chat(),
                                                 eos_token="<|im_end|>")
        else:
            assert body["prompt"] == ours["prompt"] == request.prompt
    # the unconstrained call stops on the template's end token, not at max_tokens
    out = hf.generate([REQUESTS[0]])[0]
    assert out.completion_tokens <= 12


def test_llamacpp_renders_and_stops_like_hf():
    llama_cpp = pytest.importorskip("llama_cpp")
    del llama_cpp
    from clag.llm.hf import HFBackend, convert_gguf
    from clag.llm.llamacpp import LlamaCppBackend
    from clag.llm.models import packaged_model_path

    gguf = packaged_model_path("smollm2-135m")
    lc = LlamaCppBackend(str(gguf), label="smollm2", policy=POLICY, threads=1)
    hf = HFBackend(str(convert_gguf(gguf)), label="smollm2", device="cpu", policy=POLICY)
    user_only = Request(messages=(("user", "Summarise: the sea is blue."),), temperature=0.7, max_tokens=12, seed=3)
    for request in (*REQUESTS, user_only):
        ours, theirs = hf.sampling_report(request), lc.sampling_report(request)
        hf_stops, lc_stops = ours.pop("stop_token_ids"), theirs.pop("stop_token_ids")
        assert theirs == ours                          # rendered prompt and every sampling parameter
        # llama.cpp ends on the model's end token and on the other tokens its vocabulary marks as
        # end-of-generation (<|endoftext|>, <reponame>): a known, documented superset
        assert set(hf_stops) <= set(lc_stops) and hf_stops == [2]


def test_hf_writes_the_fields_in_the_schemas_declared_order(tiny_qwen3):
    """xgrammar is compiled from the schema as declared (it once got the keys sorted by name)."""
    from clag.llm.hf import HFBackend

    folder, _ = tiny_qwen3
    hf = HFBackend(str(folder), label="tiny", device="cpu", policy=DecodingPolicy(max_whitespace=1))
    # no whitespace at all: xgrammar's JSON rule refuses a cap of 0, the GBNF path takes it
    tight = HFBackend(str(folder), label="tiny", device="cpu", policy=DecodingPolicy(max_whitespace=0))
    reply = tight.generate([Request(prompt="JSON:", json_schema={
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
        "additionalProperties": False}, temperature=0.0, max_tokens=20)])[0]
    assert " " not in reply.text and set(json.loads(reply.text)) == {"ok"}
    for names in (["zeta", "alpha"], ["alpha", "zeta"]):
        schema = {"type": "object", "properties": {n: {"type": "boolean"} for n in names},
                  "required": list(names), "additionalProperties": False}
        reply = hf.generate([Request(prompt="JSON:", json_schema=schema, temperature=0.0, max_tokens=60)])[0]
        assert list(json.loads(reply.text)) == names, reply.text
