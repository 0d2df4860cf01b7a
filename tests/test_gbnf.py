"""The JSON-schema → GBNF converter for llama.cpp (text only; the grammar runs in test_llamacpp_backend)."""

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
