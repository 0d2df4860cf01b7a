"""A scripted backend for unit tests only: answers from a function, counts what it was asked."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from clag.llm.types import Completion, Request


def as_prompt(request: Request) -> Request:
    """The request with its user message as the prompt: scripts read the prompt's text, whichever
    request format (raw prompt, or chat messages under ``request_format=openai``) carried it."""
    if request.messages is None:
        return request
    user = [content for role, content in request.messages if role == "user"]
    return dataclasses.replace(request, prompt=user[-1] if user else "", messages=None)


class ScriptedBackend:
    def __init__(self, reply: Callable[[Request], str], model_id: str = "scripted",
                 finish_reason: str = "stop", delay_s: float = 0.0) -> None:
        self.reply = reply
        self.model_id = model_id
        self.finish_reason = finish_reason
        self.delay_s = delay_s
        self.batches: list[list[Request]] = []

    @property
    def requests(self) -> list[Request]:
        return [r for batch in self.batches for r in batch]

    def generate(self, requests: list[Request]) -> list[Completion]:
        self.batches.append(list(requests))
        if self.delay_s:
            time.sleep(self.delay_s * len(requests))
        shown = [as_prompt(r) for r in requests]
        return [Completion(self.reply(r), prompt_tokens=len((r.prompt or "").split()), completion_tokens=3,
                           latency_s=0.01, finish_reason=self.finish_reason) for r in shown]
