"""The llamacpp backend on the offline SmolLM2 GGUF (skipped where llama-cpp-python is not built)."""

import json

import pytest

pytest.importorskip("llama_cpp")

from clag.llm.models import build_backend, model_id_for  # noqa: E402
from clag.llm.types import Request  # noqa: E402

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 40}},
          "required": ["answer"], "additionalProperties": False}


def config(**extra):
    return {"name": "smollm2-135m", "backend": "llamacpp", "model": "smollm2-135m",
            "threads": 2, **extra}


def test_schema_output_parses_and_greedy_and_seeded_calls_repeat():
    backend = build_backend(config())
    assert backend.model_id == model_id_for(config()) and backend.model_id.startswith("llamacpp:smollm2-135m:gguf:")
    requests = [Request(prompt="Question: What is the capital of France? Answer in JSON.", json_schema=SCHEMA,
                        temperature=0, max_tokens=40),
                Request(prompt="Write one word.", temperature=0.9, seed=7, max_tokens=12),
                Request(prompt="Write one word.", temperature=0.9, seed=7, max_tokens=12)]
    first, second = backend.generate(requests), backend.generate(requests)
    assert set(json.loads(first[0].text)) == {"answer"} and first[0].finish_reason == "stop"
    assert [c.text for c in first] == [c.text for c in second]
    assert first[1].text == first[2].text and first[0].prompt_tokens > 5


def test_chat_messages_and_the_long_prompt_rule():
    backend = build_backend(config(max_context=64))
    (completion,) = backend.generate([Request(messages=(("system", "Be brief."), ("user", "word " * 100 + "2+2?")),
                                              temperature=0, max_tokens=8)])
    assert completion.extra == {"prompt_truncated": True} and completion.prompt_tokens == 56


def test_a_folder_is_refused_with_a_clear_message(tmp_path):
    from clag.errors import UserFacingError

    with pytest.raises(UserFacingError, match="needs a GGUF file"):
        build_backend(config(path=str(tmp_path), name="folder"))


def test_long_string_bounds_do_not_crash_the_grammar_and_are_checked_by_the_client():
    from clag.llm.client import LLMClient

    schema = {"type": "object", "properties": {"abstract": {"type": "string", "maxLength": 1200}},
              "required": ["abstract"], "additionalProperties": False}
    client = LLMClient(build_backend(config()))
    (completion,) = client.generate([Request(prompt="Summarise: the cat sat. Reply in JSON.", json_schema=schema,
                                             temperature=0, max_tokens=30, tag="t")])
    assert completion.parsed is not None and "abstract" in completion.parsed


def test_every_schema_of_the_project_becomes_a_bounded_grammar_and_outputs_validate():
    import jsonschema

    from baselines import gam_prompts, memoryos_prompts
    from clag import prompts
    from clag.llm.gbnf import schema_to_gbnf
    from eval.answer import answer_schema

    schemas = [gam_prompts.plan_schema(), gam_prompts.integrate_schema(), memoryos_prompts.keywords_schema(),
               memoryos_prompts.continuity_schema(), prompts.analysis_schema(), prompts.evolution_schema(),
               prompts.profile_schema(), answer_schema()]
    assert "char{0,300}" in schema_to_gbnf(prompts.analysis_schema())
    backend = build_backend(config())
    for schema in schemas:
        (completion,) = backend.generate([Request(prompt="Reply in JSON about a dog named Rex.", json_schema=schema,
                                                  temperature=0.7, seed=1, max_tokens=300)])
        if completion.finish_reason == "stop":
            jsonschema.validate(json.loads(completion.text), schema)


def test_the_engine_writes_the_fields_in_the_schemas_declared_order():
    """The grammar fixes the order the model writes the fields in; it must be the schema's own
    (the reference's evolution asks should_evolve first), not sorted by name."""
    backend = build_backend(config())
    for names in (["zeta", "alpha"], ["alpha", "zeta"]):
        schema = {"type": "object", "properties": {n: {"type": "boolean"} for n in names},
                  "required": list(names), "additionalProperties": False}
        reply = backend.generate([Request(prompt="Answer in JSON.", json_schema=schema, temperature=0,
                                          max_tokens=30)])[0]
        assert list(json.loads(reply.text)) == names, reply.text
