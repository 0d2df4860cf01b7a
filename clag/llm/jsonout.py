"""JSON output: parsing as the reference does, and schema checks.

The reference controller strips everything before the first ``{`` and after the last ``}``
and calls ``json.loads``. On a failure it substitutes an "empty" object built from the schema;
each caller here applies that call's equivalent explicitly (no evolution, no route, no
selected cluster, the raw text for keywords and answers), and the client counts the failure.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema


class JSONParseError(ValueError):
    """The model's text holds no parsable JSON object."""


def extract_json(text: str) -> dict[str, Any]:
    """The object between the first ``{`` and the last ``}`` (the client has already stripped a
    reasoning block, as GAM's reference parses what follows ``</think>``)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise JSONParseError("no JSON object in the output")
    try:
        value = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise JSONParseError(f"invalid JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise JSONParseError("the JSON value is not an object")
    return value


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def schema_violation(value: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """The first way ``value`` breaks ``schema``, or None."""
    error = next(iter(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value)), None)
    return None if error is None else error.message[:200]
