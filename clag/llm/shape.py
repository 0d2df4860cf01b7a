"""Request shapes: how a prompt becomes what a server is sent, as the reference's controllers do.

The reference sends the same prompt two ways, and a 0.5B model answers them differently (see
``docs/profiles.md``): its SGLang controller posts the raw prompt to ``/generate`` (no chat
template), its OpenAI controller sends chat messages — a fixed system message, then the prompt as
the user message — which the server renders with the model's own chat template.

- ``sglang``: requests stay as the caller wrote them (a raw prompt stays raw; ``llm.prompt_format``
  still decides whether a backend wraps it in the template).
- ``openai``: every raw-prompt request becomes ``[system, user=prompt]``; every backend then renders
  it with the model's template (``hf``/``llamacpp`` locally, servers on their side).

The shape rewrites the request before its seed and cache key are derived, so it is part of both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from clag.llm.types import Request

REQUEST_SHAPES = ("sglang", "openai")


@dataclass(frozen=True)
class RequestShape:
    name: str = "sglang"
    #: the system message sent before every prompt (``openai`` only)
    system_message: str | None = None

    def __post_init__(self) -> None:
        if self.name not in REQUEST_SHAPES:
            raise ValueError(f"request_shape must be one of {', '.join(REQUEST_SHAPES)}, not {self.name!r}")
        if self.name == "openai" and self.system_message is None:
            raise ValueError("the openai request shape needs the reference's system message")

    def apply(self, request: Request) -> Request:
        """The request as this shape sends it (requests that are already chat stay as they are)."""
        if self.name != "openai" or request.prompt is None:
            return request
        return replace(request, prompt=None,
                       messages=(("system", self.system_message or ""), ("user", request.prompt)))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "system_message": self.system_message}
