"""The ``openai`` backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama).

``endpoint: chat`` sends chat completions; ``endpoint: completions`` sends the raw prompt (what
the paper did against SGLang). Schemas go as ``response_format`` JSON schema. Requests run with
bounded concurrency, a timeout, and tenacity retries; a server that stays unreachable ends the
run with one line naming its URL.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from clag.errors import UserFacingError
from clag.llm.types import Completion, Request


class LLMServerError(UserFacingError):
    """The server failed after every retry."""


class OpenAIBackend:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        endpoint: str = "chat",
        concurrency: int = 8,
        timeout_s: float = 60.0,
        retries: int = 3,
        repetition_penalty: float = 1.0,
    ) -> None:
        from openai import OpenAI

        if endpoint not in ("chat", "completions"):
            raise ValueError(f"endpoint must be chat or completions, not {endpoint!r}")
        self.base_url = base_url
        self.model = model
        self.endpoint = endpoint
        self.concurrency = max(1, int(concurrency))
        self.retries = max(1, int(retries))
        self.repetition_penalty = float(repetition_penalty)
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
        self.model_id = f"openai:{model}:{endpoint}:rep{self.repetition_penalty}"

    def generate(self, requests: list[Request]) -> list[Completion]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._one, requests))

    def _payload(self, request: Request) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "temperature": request.temperature,
                                   "max_tokens": request.max_tokens}
        extra: dict[str, Any] = {}
        if request.seed is not None:
            payload["seed"] = request.seed
        if self.repetition_penalty != 1.0:
            extra["repetition_penalty"] = self.repetition_penalty
        if request.json_schema is not None:
            response_format = {"type": "json_schema", "json_schema": {
                "name": "response", "schema": request.json_schema, "strict": True}}
            if self.endpoint == "chat":
                payload["response_format"] = response_format
            else:  # the SDK's completions call has no such argument; servers read it from the body
                extra["response_format"] = response_format
        if extra:
            payload["extra_body"] = extra
        return payload

    def _one(self, request: Request) -> Completion:
        import openai
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        payload = self._payload(request)
        started = time.perf_counter()
        try:
            for attempt in Retrying(stop=stop_after_attempt(self.retries), reraise=True,
                                    wait=wait_exponential(multiplier=0.5, max=8),
                                    retry=retry_if_exception_type((openai.APIConnectionError,
                                                                   openai.APITimeoutError,
                                                                   openai.InternalServerError,
                                                                   openai.RateLimitError))):
                with attempt:
                    if self.endpoint == "chat":
                        resp = self.client.chat.completions.create(
                            messages=request.text_for_chat(), **payload)
                        choice = resp.choices[0]
                        text = choice.message.content or ""
                    else:
                        prompt = request.prompt if request.prompt is not None else "\n".join(
                            m["content"] for m in request.text_for_chat())
                        resp = self.client.completions.create(prompt=prompt, **payload)
                        choice = resp.choices[0]
                        text = choice.text or ""
        except openai.OpenAIError as exc:
            raise LLMServerError(f"LLM server at {self.base_url} failed after {self.retries} "
                                 f"attempts: {type(exc).__name__}: {exc}") from exc
        usage = getattr(resp, "usage", None)
        return Completion(
            text=text,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=time.perf_counter() - started,
            finish_reason="length" if choice.finish_reason == "length" else "stop",
        )
