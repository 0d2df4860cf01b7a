"""The ``openai`` backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama).

A raw prompt goes to the completions endpoint as is (what the paper sent to SGLang); a
chat-message request (the run's request format decides which a prompt becomes) goes to the
chat endpoint, where the server renders them with the model's template and
``chat_template_kwargs`` (thinking off) — the same template and switch the in-process backends
apply. The policy's sampling filters are sent explicitly on every request (servers otherwise
apply the model's own top-k/top-p); schemas go as ``response_format`` JSON schema.

``dialect="llamacpp"`` speaks to llama.cpp's server (:mod:`clag.llm.llama_server`): schemas go
as our GBNF grammar (the in-process ``llamacpp`` backend's, so both decode under one grammar),
the repetition penalty under llama.cpp's name, prompts stay in the slot's cache (not on a
one-slot server, the bit-exact path: a prompt prefilled after a predecessor that shares its
prefix gives other replies than the same prompt prefilled whole).

Requests run within one budget per server for the whole process (:class:`RequestBudget`,
``llm.concurrency``), with a timeout that starts when a request is sent (the reference's is 60 s)
and tenacity retries.
A request that still fails becomes an *error completion* (empty text, ``finish_reason="error"``):
the reference treats an error as an empty reply, the client counts it, never caches it, and
stops the run only when errors pass ``llm.max_error_rate``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from clag.errors import UserFacingError
from clag.llm.decoding import DecodingPolicy
from clag.llm.request_format import RAW_PROMPTS_ID
from clag.llm.types import Completion, Request
from clag.pools import interruptible_pool


class RequestBudget:
    """How many requests this process has in flight to one server, at most ``size``.

    ``llm.concurrency`` is the process's budget per server, not per call site: every thread that
    calls the backend (streams, questions, prefetch chunks) takes a permit before it sends, so a
    server sees at most ``size`` requests from this process and a request's timeout starts when it
    is sent, never while it waits behind the process's own other requests. ``peak`` is the most
    that were ever in flight at once (read by the tests; not yet in the ledger)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, int(size))
        self._permits = threading.BoundedSemaphore(self.size)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    @contextmanager
    def permit(self) -> Iterator[None]:
        with self._permits:
            with self._lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self.in_flight -= 1


_BUDGETS: dict[str, RequestBudget] = {}
_BUDGETS_LOCK = threading.Lock()


def server_budget(base_url: str, size: int) -> RequestBudget:
    """The process's one budget for the server at ``base_url`` (the first backend to ask sets its
    size; every backend of a run is built from one config, so they all ask the same)."""
    with _BUDGETS_LOCK:
        if base_url not in _BUDGETS:
            _BUDGETS[base_url] = RequestBudget(size)
        return _BUDGETS[base_url]


#: what the served model is known by, per (base_url, model): asked once per process
_ENGINES: dict[tuple[str, str], str] = {}


def list_models(base_url: str, api_key: str = "EMPTY", timeout_s: float = 10.0) -> list[Any] | None:
    """The entries of the server's model list (``GET {base_url}/models``: ``id``, ``owned_by``,
    vLLM's ``root``), or None where the server answers but has no list. One place asks it for
    the cache identity (:func:`served_engine`), the run's preflight and ``eval doctor``.

    A server nothing answers for raises ``openai.APIConnectionError`` (or ``APITimeoutError``):
    what that means is each caller's to say (a stop, an "unlisted" engine, a FAIL line)."""
    import openai
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
    try:
        return list(client.models.list().data)
    except openai.APIStatusError:
        return None


def served_engine(base_url: str, model: str, api_key: str = "EMPTY") -> str:
    """Which engine serves ``model`` at ``base_url``, and from what: the model list's ``owned_by``
    (``vllm``, ``sglang``, ``llamacpp``) and, where the engine says it, the weights it loaded
    (vLLM's ``root``). Without it a vLLM run would reuse an SGLang run's cached replies.
    ``unlisted`` where the server has no list or cannot be reached (the run's preflight then
    stops a run that cannot reach it); only an answer is remembered."""
    import openai

    if (base_url, model) in _ENGINES:
        return _ENGINES[(base_url, model)]
    try:
        listed = list_models(base_url, api_key) or []
    except openai.OpenAIError:
        return "unlisted"
    entry = next((m for m in listed if m.id == model), listed[0] if listed else None)
    if entry is None:
        return "unlisted"
    root = getattr(entry, "root", None)
    engine = f"{entry.owned_by}" + (f"({root})" if root and root != entry.id else "")
    _ENGINES[(base_url, model)] = engine
    return engine


def openai_model_id(model: str, policy: DecodingPolicy, engine: str = "unlisted",
                    revision: str | None = None) -> str:
    """The cache identity of a served model: its name and pinned revision (``llm.revision``, which
    ``scripts/serve.sh`` passes to the engine), the engine serving it, and the policy."""
    return f"openai:{model}@{revision or 'unpinned'}:{engine}:{RAW_PROMPTS_ID}:{policy.identity()}"


class OpenAIBackend:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        concurrency: int = 8,
        timeout_s: float = 60.0,
        retries: int = 3,
        policy: DecodingPolicy | None = None,
        dialect: str = "openai",
        model_id: str | None = None,
        context_tokens: int | None = None,
        prompt_cache: bool = True,
    ) -> None:
        from openai import OpenAI

        if dialect not in ("openai", "llamacpp"):
            raise ValueError(f"dialect must be openai or llamacpp, not {dialect!r}")
        if dialect == "llamacpp" and policy is not None and policy.stop_token_ids:
            raise UserFacingError("llama-server takes no extra stop token ids (llm.stop_token_ids); "
                                  "use the in-process llamacpp backend (llm.server=null) for them")
        problem = (policy or DecodingPolicy()).penalty_window_error(
            "llama.cpp's server" if dialect == "llamacpp" else "an OpenAI-compatible server (vLLM, SGLang)",
            counts_prompt=True)
        if problem:
            raise UserFacingError(problem)
        self.dialect = dialect
        # llama-server's slot context: the repetition window of "the whole sequence" (the server
        # rejects llama.cpp's -1 for it; the in-process backend likewise uses its n_ctx)
        self.context_tokens = context_tokens
        # llama-server reuses the longest cached prefix of an earlier prompt and prefills only the
        # rest, whose numerics differ from a whole prefill: off, a reply depends on its request alone
        self.prompt_cache = prompt_cache
        self.base_url = base_url
        self.model = model
        self.concurrency = max(1, int(concurrency))
        self.budget = server_budget(base_url, self.concurrency)
        self.retries = max(1, int(retries))
        self.policy = policy or DecodingPolicy()
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
        self.model_id = model_id or openai_model_id(model, self.policy,
                                                    served_engine(base_url, model, api_key))
        # the server's model decides its end tokens (its generation config); the policy's extras are sent
        self.stop_token_ids: tuple[int, ...] = self.policy.stop_token_ids

    def generate(self, requests: list[Request]) -> list[Completion]:
        with interruptible_pool(self.concurrency, "llm-request") as pool:
            return list(pool.map(self._one, requests))

    def uses_chat(self, request: Request) -> bool:
        return request.messages is not None

    def payload(self, request: Request) -> dict[str, Any]:
        """The request body's fields (``extra_body`` is what the SDK merges into the body)."""
        payload: dict[str, Any] = {"model": self.model, "temperature": request.temperature,
                                   "max_tokens": request.max_tokens, "top_p": self.policy.top_p}
        if request.seed is not None:
            payload["seed"] = request.seed
        extra: dict[str, Any] = dict(self.policy.server_sampling())
        if self.policy.stop_token_ids:
            extra["stop_token_ids"] = list(self.policy.stop_token_ids)
        if self.dialect == "llamacpp":
            self._llamacpp_fields(request, payload, extra)
        elif request.json_schema is not None:
            response_format = {"type": "json_schema", "json_schema": {
                "name": "response", "schema": request.json_schema, "strict": True}}
            if self.uses_chat(request):
                payload["response_format"] = response_format
            else:  # the SDK's completions call has no such argument; servers read it from the body
                extra["response_format"] = response_format
        if self.uses_chat(request):
            extra["chat_template_kwargs"] = self.policy.chat_template_kwargs()
        payload["extra_body"] = extra
        return payload

    def _llamacpp_fields(self, request: Request, payload: dict[str, Any], extra: dict[str, Any]) -> None:
        """llama.cpp's names, and the in-process backend's grammar and seed default."""
        from clag.llm.llamacpp import grammar_source

        extra["repeat_penalty"] = extra.pop("repetition_penalty")
        if "repeat_last_n" not in extra:   # the policy's whole sequence; the server's default is 64
            if self.context_tokens is None:
                raise ValueError("the llamacpp dialect needs context_tokens for a whole-sequence "
                                 "repetition window")
            extra["repeat_last_n"] = self.context_tokens
        extra["cache_prompt"] = self.prompt_cache
        payload.setdefault("seed", 0)          # the in-process backend's default; the server's is random
        if request.json_schema is not None:
            kind, source = grammar_source(request.json_schema, self.policy.max_whitespace,
                                         self.policy.whitespace_chars)
            extra["grammar" if kind == "gbnf" else "json_schema"] = (
                source if kind == "gbnf" else json.loads(source))

    def _one(self, request: Request) -> Completion:
        import openai
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        payload = self.payload(request)
        started = time.perf_counter()
        try:
            for attempt in Retrying(stop=stop_after_attempt(self.retries), reraise=True,
                                    wait=wait_exponential(multiplier=0.5, max=8),
                                    retry=retry_if_exception_type((openai.APIConnectionError,
                                                                   openai.APITimeoutError,
                                                                   openai.InternalServerError,
                                                                   openai.RateLimitError))):
                with attempt, self.budget.permit():   # a retry's wait holds no permit
                    if self.uses_chat(request):
                        resp = self.client.chat.completions.create(
                            messages=request.text_for_chat(), **payload)
                        choice = resp.choices[0]
                        text = choice.message.content or ""
                    else:
                        resp = self.client.completions.create(prompt=request.prompt, **payload)
                        choice = resp.choices[0]
                        text = choice.text or ""
        except openai.OpenAIError as exc:
            return Completion(text="", latency_s=time.perf_counter() - started, finish_reason="error",
                              extra={"error": f"LLM server at {self.base_url} failed after {self.retries} "
                                              f"attempt(s): {type(exc).__name__}: {exc}"})
        usage = getattr(resp, "usage", None)
        return Completion(
            text=text,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=time.perf_counter() - started,
            finish_reason="length" if choice.finish_reason == "length" else "stop",
        )
