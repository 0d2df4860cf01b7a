"""A scripted backend for unit tests only: answers from a function, counts what it was asked."""

from __future__ import annotations

import time
from collections.abc import Callable

from clag.llm.types import Completion, Request


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
        return [Completion(self.reply(r), prompt_tokens=len((r.prompt or "").split()), completion_tokens=3,
                           latency_s=0.01, finish_reason=self.finish_reason) for r in requests]
