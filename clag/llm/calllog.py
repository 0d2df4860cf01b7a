"""Every call a run makes, one JSON line each (``calls.jsonl``): what the health report reads.

The ledger counts; this keeps each reply's shape, so a run can say afterwards *how* its model
behaved — which calls ran to the token cap and whether in whitespace or in repeated text, which
did not parse, which came back with empty required fields, what they said — without reopening
the shared request cache. Cached calls are logged too (``cached: true``): a run served from the
cache gets the same report as the run that made the calls.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from clag.llm.types import Completion, Request

#: a capped reply whose last characters are all whitespace looped in whitespace (an unbounded
#: grammar whitespace rule), any other capped reply repeated text
WHITESPACE_TAIL = 64
#: unparsed replies are kept this long (parsed ones whole: their values are what is checked)
TEXT_KEPT = 400


def empty_required_fields(parsed: dict[str, Any] | None, schema: dict[str, Any] | None) -> list[str]:
    """The schema's required fields that came back empty ("", [], {} or null)."""
    if not isinstance(parsed, dict) or not schema:
        return []
    required = schema.get("required") or list((schema.get("properties") or {}).keys())
    return [name for name in required if name in parsed and parsed[name] in ("", [], {}, None)]


def cap_kind(completion: Completion) -> str | None:
    """How a reply that hit ``max_tokens`` spent its tokens: ``whitespace`` or ``repeat``."""
    if completion.finish_reason != "length":
        return None
    tail = completion.text[-WHITESPACE_TAIL:]
    return "whitespace" if tail and not tail.strip() else "repeat"


def call_record(request: Request, completion: Completion, scope: str, key: str,
                schema_violated: bool) -> dict[str, Any]:
    schema = request.output_schema
    record: dict[str, Any] = {
        "scope": scope, "tag": request.tag, "key": key, "cached": completion.cached,
        "finish_reason": completion.finish_reason, "max_tokens": request.max_tokens,
        "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
        "structured": schema is not None,
    }
    if completion.finish_reason == "length":
        record["capped"] = cap_kind(completion)
    if schema is not None:
        record["parsed"] = completion.parsed is not None
        record["schema_violation"] = schema_violated
        record["empty_fields"] = empty_required_fields(completion.parsed, schema)
    if completion.parsed is not None:
        record["reply"] = completion.parsed
    else:
        record["text"] = completion.text[:TEXT_KEPT]
        record["text_chars"] = len(completion.text)
    return record


class CallLog:
    """Appends one line per call to ``path``, flushed at once (a killed run keeps what it did)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
