"""SQLite request cache: a rerun of the same config makes zero LLM calls.

Keyed by (model id, prompt or messages, schema, sampling params, seed). WAL mode lets several
runs share one file; a corrupted file is moved aside and rebuilt with a warning.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import warnings
from dataclasses import asdict
from pathlib import Path

from clag.llm.types import Completion, Request


def property_orders(schema: object) -> list[list[str]]:
    """Every object's property names in declared order, depth first. Grammars make a model write
    the fields in this order, so two schemas that differ only in it must not share a completion."""
    found: list[list[str]] = []
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            found.append(list(properties))
        for value in schema.values():
            found.extend(property_orders(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(property_orders(value))
    return found


def request_key(model_id: str, request: Request) -> str:
    """The payload is hashed with sorted keys, which loses the schema's property order; the order
    is added to the key only where some object's properties are not already sorted, so keys of
    sorted schemas stay what they were."""
    payload = {
        "model": model_id,
        "prompt": request.prompt,
        "messages": request.messages,
        "schema": request.json_schema,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
    }
    orders = property_orders(request.json_schema)
    if any(order != sorted(order) for order in orders):
        payload["property_order"] = orders
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class RequestCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            self.path.rename(aside)
            warnings.warn(f"LLM cache {self.path} was corrupted; moved to {aside} and rebuilt",
                          stacklevel=2)
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("SELECT count(*) FROM completions").fetchone()   # reads a page: detects garbage
        conn.commit()
        return conn

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM completions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return Completion(**data)

    def put(self, key: str, completion: Completion) -> None:
        data = asdict(completion)
        data.update(cached=False, parsed=None, parse_error=None)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO completions VALUES (?, ?)",
                               (key, json.dumps(data)))
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
