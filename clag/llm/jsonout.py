"""JSON output: parsing as the reference does, its empty fallback, and schema checks.

The reference controller strips everything before the first ``{`` and after the last ``}``
and calls ``json.loads``; on any failure it substitutes an "empty" object built from the
schema ([] / "" / 0 / false). We do the same, but every failure is counted by the client.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema


class JSONParseError(ValueError):
    """The model's text holds no parsable JSON object."""


def extract_json(text: str) -> dict[str, Any]:
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


def empty_from_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The reference's fallback object: each property's empty value by type."""
    empties = {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False, "object": {}}
    out = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type", "string")
        if isinstance(kind, list):
            kind = kind[0]
        out[name] = empties.get(kind)
    return out


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def schema_violation(value: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """The first way ``value`` breaks ``schema``, or None."""
    error = next(iter(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value)), None)
    return None if error is None else error.message[:200]
