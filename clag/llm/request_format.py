"""Request formats: how a prompt reaches the model, decided in one place for every backend.

The reference sends the same prompt two ways, and a 0.5B model answers them differently (see
``docs/profiles.md``): its SGLang controller posts the raw prompt to ``/generate`` (no chat
template), its OpenAI controller sends chat messages — a fixed system message, then the prompt as
the user message — which the server renders with the model's own chat template. A run names one
format (``profile.request_format``):

- ``raw``: the prompt as it is, no chat template (the reference's SGLang path, the paper's);
- ``chat``: the prompt as the one user message of the model's chat template, no system message;
- ``openai``: the reference's system message, then the prompt as the user message (its OpenAI path).

The client puts every request in the run's format before its seed and cache key are derived, so
the format is part of both. Backends need no setting of their own: they complete a raw prompt as
it is and render chat messages with the model's template. Requests a caller already wrote as
chat stay as they are in every format.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from clag.llm.types import Request

REQUEST_FORMATS = ("raw", "chat", "openai")


@dataclass(frozen=True)
class RequestFormat:
    name: str = "raw"
    #: the system message sent before every prompt (``openai`` only)
    system_message: str | None = None

    def __post_init__(self) -> None:
        if self.name not in REQUEST_FORMATS:
            raise ValueError(f"request_format must be one of {', '.join(REQUEST_FORMATS)}, not {self.name!r}")
        if self.name == "openai" and self.system_message is None:
            raise ValueError("the openai request format needs the reference's system message")

    def apply(self, request: Request) -> Request:
        """The request as this format sends it (requests that are already chat stay as they are)."""
        if self.name == "raw" or request.prompt is None:
            return request
        system = (("system", self.system_message),) if self.name == "openai" else ()
        return replace(request, prompt=None, messages=(*system, ("user", request.prompt)))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "system_message": self.system_message}


def describe_format(name: str) -> str:
    """How a run's prompts reached the model, for its summary line."""
    return "raw prompts" if name == "raw" else f"chat messages: request format {name}"


#: the segment of every backend's model id (and so of every cache key) that named the backend's
#: prompt format when backends had one: each completes a raw prompt as it is now, and the segment
#: stays so that the replies cached by earlier runs — all of them made that way — still answer
RAW_PROMPTS_ID = "raw"
