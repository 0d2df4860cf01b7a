"""Requests, completions and the backend protocol (a batch API from the start)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Request:
    """One generation. ``prompt`` (raw text) or ``messages`` (chat), never both.

    ``tag`` names the call's purpose (note, route, evolve, profile, keywords, select, answer) for
    the ledger; ``seed`` is filled in by the client for sampled calls so reruns are identical.
    """

    prompt: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None
    json_schema: dict[str, Any] | None = None
    temperature: float = 0.7
    max_tokens: int = 1000
    seed: int | None = None
    tag: str = "untagged"
    #: parse and validate the output against this schema without constraining decoding (a method
    #: whose reference asks for JSON in plain text); not part of the cache key
    parse_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("a Request needs exactly one of prompt or messages")
        if self.json_schema is not None and self.parse_schema is not None:
            raise ValueError("a Request constrains (json_schema) or only parses (parse_schema), not both")

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The schema the output is parsed and checked against, constrained or not."""
        return self.json_schema if self.json_schema is not None else self.parse_schema

    def text_for_chat(self) -> list[dict[str, str]]:
        """The request as chat messages (a raw prompt becomes one user message)."""
        if self.messages is not None:
            return [{"role": role, "content": content} for role, content in self.messages]
        return [{"role": "user", "content": self.prompt or ""}]


@dataclass
class Completion:
    """A backend's answer. ``parsed`` is set by the client when the request had a schema."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"        # "stop" | "length" | "error"
    cached: bool = False
    parsed: dict[str, Any] | None = None
    parse_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class LLM(Protocol):
    """A backend: turns a batch of requests into completions, in order."""

    #: identifies weights + decoding setup in cache keys (e.g. file sha256, decoding policy)
    model_id: str

    def generate(self, requests: list[Request]) -> list[Completion]: ...
