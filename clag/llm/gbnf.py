"""JSON schema → llama.cpp grammar (GBNF) for the schema subset this project uses.

llama-cpp-python's own converter spells ``maxLength: n`` as n nested optional rules, and for
the bounds used here (hundreds of characters) llama.cpp's grammar parser overflows its stack.
GBNF has bounded repetition (``x{0,n}``), so this converter writes bounds that way. Supported:
objects whose properties are all required (in declared order, no extras), strings with
``maxLength``/``minLength`` or ``enum``, integers, numbers, booleans, and arrays with
``minItems``/``maxItems``. Anything else raises :class:`UnsupportedSchema` so the caller can
fall back. Whitespace between tokens is allowed but capped (small models otherwise emit it
forever) as the decoding policy says, as the ``hf`` backend does.
"""

from __future__ import annotations

import json
from typing import Any


class UnsupportedSchema(ValueError):
    """The schema uses a feature this converter does not write."""


CHAR = r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
INTEGER = 'integer ::= "-"? ("0" | [1-9] [0-9]{0,17})'
NUMBER = 'number ::= integer ("." [0-9]{1,17})? ([eE] [-+]? [0-9]{1,3})?'


def _literal(text: str) -> str:
    """A GBNF string literal for ``text`` (which is itself JSON text)."""
    return json.dumps(text)


#: how each whitespace character is written inside a GBNF character class
_CLASS_ESCAPES = {" ": " ", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def whitespace_rule(max_whitespace: int | None, chars: str = " \t\n") -> str:
    """The whitespace allowed between JSON tokens: ``chars`` (some of space, tab, newline,
    return), at most ``max_whitespace`` of them (``None``: unbounded). ``(1, " ")`` is
    llama-cpp-python's own rule, one optional space and never a newline."""
    unknown = set(chars) - set(_CLASS_ESCAPES)
    if not chars or unknown:
        raise ValueError(f"whitespace characters must be some of space, tab, newline, return: {chars!r}")
    klass = "[" + "".join(_CLASS_ESCAPES[c] for c in dict.fromkeys(chars)) + "]"
    return f"{klass}*" if max_whitespace is None else f"{klass}{{0,{max_whitespace}}}"


class _Writer:
    def __init__(self, max_whitespace: int | None, whitespace_chars: str = " \t\n") -> None:
        self.rules: dict[str, str] = {}
        self.ws = whitespace_rule(max_whitespace, whitespace_chars)

    def rule(self, hint: str, body: str) -> str:
        name = "".join(c if c.isalnum() else "-" for c in hint).strip("-").lower() or "r"
        candidate, n = name, 1
        while candidate in self.rules and self.rules[candidate] != body:
            n += 1
            candidate = f"{name}-{n}"
        self.rules[candidate] = body
        return candidate

    def value(self, schema: dict[str, Any], hint: str) -> str:
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"schema at {hint} is not an object")
        if "enum" in schema:
            values = schema["enum"]
            if not values or not all(isinstance(v, str) for v in values):
                raise UnsupportedSchema(f"{hint}: only non-empty string enums are supported")
            return self.rule(hint, " | ".join(_literal(json.dumps(v)) for v in values))
        kind = schema.get("type")
        if kind == "string":
            low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
            if high is not None:
                repeat = f"char{{{low},{int(high)}}}"
            else:
                repeat = f"char{{{low},}}" if low else "char*"
            return self.rule(hint, f'"\\"" {repeat} "\\""')
        if kind == "integer":
            return "integer"
        if kind == "number":
            return "number"
        if kind == "boolean":
            return self.rule("boolean", '"true" | "false"')
        if kind == "array":
            item = self.value(schema.get("items", {}), f"{hint}-item")
            low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
            rest_low = max(low - 1, 0)
            if high is not None:
                rest = f"{{{rest_low},{int(high) - 1}}}"
            else:
                rest = f"{{{rest_low},}}" if rest_low else "*"
            if high is not None and int(high) == 0:
                return self.rule(hint, f'"[" {self.ws} "]"')
            items = f'{item} ({self.ws} "," {self.ws} {item}){rest}'
            if low > 0:
                return self.rule(hint, f'"[" {self.ws} {items} {self.ws} "]"')
            return self.rule(hint, f'"[" {self.ws} ({items})? {self.ws} "]"')
        if kind == "object":
            properties = schema.get("properties", {})
            closed = schema.get("additionalProperties", True) is False
            if set(schema.get("required", [])) != set(properties) or not closed:
                raise UnsupportedSchema(f"{hint}: objects need every property required and no extras")
            parts = [f'{_literal(json.dumps(key))} {self.ws} ":" {self.ws} '
                     f'{self.value(sub, f"{hint}-{key}")}' for key, sub in properties.items()]
            inner = f' {self.ws} "," {self.ws} '.join(parts)
            body = f'"{{" {self.ws} {inner} {self.ws} "}}"' if parts else f'"{{" {self.ws} "}}"'
            return self.rule(hint, body)
        raise UnsupportedSchema(f"{hint}: type {kind!r} is not supported")


def schema_to_gbnf(schema: dict[str, Any], max_whitespace: int | None = 16,
                   whitespace_chars: str = " \t\n") -> str:
    """``max_whitespace``/``whitespace_chars``: the decoding policy's whitespace between tokens
    (how many, ``None``: unbounded; and which characters)."""
    writer = _Writer(max_whitespace, whitespace_chars)
    top = writer.value(schema, "root-value")
    lines = [f"root ::= {top} {writer.ws}"]
    lines += [f"{name} ::= {body}" for name, body in writer.rules.items()]
    return "\n".join([*lines, CHAR, INTEGER, NUMBER]) + "\n"
