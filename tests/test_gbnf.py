"""The JSON-schema → GBNF converter for llama.cpp (text only; the grammar runs in test_llamacpp_backend)."""

import re

import pytest

from clag.llm.gbnf import UnsupportedSchema, schema_to_gbnf


def test_bounds_are_written_as_bounded_repetition():
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 300},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 20}, "maxItems": 3},
        "ok": {"type": "boolean"}, "n": {"type": "integer"},
        "tool": {"type": "array", "items": {"type": "string", "enum": ["keyword", "vector"]}, "minItems": 1}},
        "required": ["name", "tags", "ok", "n", "tool"], "additionalProperties": False}
    grammar = schema_to_gbnf(schema, max_whitespace=4)
    assert 'root-value-name ::= "\\"" char{0,300} "\\""' in grammar
    assert "char{1,20}" in grammar and "){0,2})?" in grammar                # at most 3 items, possibly none
    assert '"\\"keyword\\"" | "\\"vector\\""' in grammar
    tool = grammar.split("root-value-tool ::=")[1].split("\n")[0]
    assert tool.endswith(')* [ \\t\\n]{0,4} "]"') and ")?" not in tool    # one tool or more
    order = [grammar.index(f'"\\"{key}\\""') for key in ("name", "tags", "ok", "n", "tool")]
    assert order == sorted(order)                                           # declared order
    assert grammar.startswith("root ::= root-value [ \\t\\n]{0,4}")


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": []},       # optional property
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},    # extras allowed
    {"type": "null"},
    {"anyOf": [{"type": "string"}]},
])
def test_unsupported_features_are_refused_so_the_caller_can_fall_back(schema):
    with pytest.raises(UnsupportedSchema):
        schema_to_gbnf(schema)


def test_what_the_engines_are_given_keeps_the_declared_order():
    """schema_to_gbnf keeps it; the memoised grammar_source in front of it once sorted the keys
    (``sort_keys``), so every llama.cpp run wrote the reference's evolution fields alphabetically,
    ``should_evolve`` fourth instead of first."""
    from clag.llm.llamacpp import grammar_source
    from clag.prompts import analysis_schema, evolution_schema

    def first_fields(schema, count):
        root = next(line for line in grammar_source(schema, 1, " ")[1].splitlines()
                    if line.startswith("root-value ::="))
        return re.findall(r'"\\"(\w+)\\""', root)[:count]

    assert first_fields(evolution_schema(True, "reference"), 2) == ["should_evolve", "actions"]
    assert first_fields(analysis_schema(True), 3) == ["keywords", "context", "tags"]
    swapped = {"type": "object", "properties": {"b": {"type": "boolean"}, "a": {"type": "boolean"}},
               "required": ["b", "a"], "additionalProperties": False}
    assert first_fields(swapped, 2) == ["b", "a"]


def test_schemas_that_differ_only_in_property_order_never_share_a_cached_completion():
    import hashlib
    import json

    from clag.llm.cache import request_key
    from clag.llm.types import Request

    def schema(names):
        return {"type": "object", "properties": {n: {"type": "boolean"} for n in names},
                "required": list(names), "additionalProperties": False}

    ba, ab = (Request(prompt="p", json_schema=schema(n)) for n in (["b", "a"], ["a", "b"]))
    assert request_key("m", ba) != request_key("m", ab)
    # a sorted schema keeps the key it always had
    old = {"model": "m", "prompt": "p", "messages": None, "schema": schema(["a", "b"]), "temperature": ab.temperature,
           "max_tokens": ab.max_tokens, "seed": None}
    assert request_key("m", ab) == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()
