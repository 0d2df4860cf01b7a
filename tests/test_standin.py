"""The stand-in server behind the full-scale sweep benchmark: replies valid for any schema the
harness sends, a model list, and counts of what it served."""

from __future__ import annotations

import jsonschema
import pytest

from clag.llm.openai_backend import OpenAIBackend
from clag.llm.preflight import check_server
from clag.llm.request_format import RequestFormat
from clag.llm.types import Request
from scripts.standin_server import StandInServer, measure_capacity, schema_instance

SCHEMAS = [
    {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}},
                                      "context": {"type": "string"}, "tags": {"type": "array",
                                                                              "items": {"type": "string"}}},
     "required": ["keywords", "context", "tags"], "additionalProperties": False},
    {"type": "object", "properties": {"choice": {"type": "string", "enum": ["c1", "c2", "new"]}},
     "required": ["choice"]},
    {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer", "minimum": 1},
                                              "minItems": 2, "maxItems": 2},
                                      "flag": {"type": "boolean"}, "score": {"type": ["number", "null"]},
                                      "short": {"type": "string", "maxLength": 4, "minLength": 2}}},
    {"anyOf": [{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
               {"type": "null"}]},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_every_instance_is_valid_for_its_schema(schema):
    for seed in ("a", "b", "c"):
        jsonschema.validate(schema_instance(schema, ["patient", "treatment", "disease"], seed), schema)


def test_the_server_answers_the_harness_and_counts_what_it_served():
    server = StandInServer("served")
    try:
        backend = OpenAIBackend(server.url, "served", retries=1)
        assert check_server(backend, RequestFormat("openai", system_message="s")) is None
        schema = SCHEMAS[0]
        done = backend.generate([Request(prompt="Patients with anaemia received treatment.", json_schema=schema,
                                         temperature=0.0)] * 3 + [Request(prompt="plain", temperature=0.0)])
        assert all(c.finish_reason == "stop" for c in done)
        import json

        jsonschema.validate(json.loads(done[0].text), schema)
        assert done[3].text.startswith("The answer is")
        assert backend.model_id.split(":")[2] == "standin"
        stats = server.stats()
        assert stats["requests"] == 5 and stats["peak_in_flight"] >= 1     # the preflight's one too
        assert measure_capacity(server.url, "served", seconds=0.5, clients=4) > 10
    finally:
        server.close()
