"""Before a run ingests anything: does the LLM server it names answer?

Under the reference profile a failed call is an empty reply (``max_error_rate: 1.0``, the
reference's own semantics), so a wrong port, a misnamed model or a request every server refuses
would otherwise give hours of empty replies and a run that looks complete. A server run therefore
asks once, up front, through the backend the run will use: the server's model list (where it has
one), then one tiny request in the run's own request format, with a schema, as the run sends
them. It stops with one line if that fails. Nothing of it reaches the cache or the ledger.
"""

from __future__ import annotations

from typing import Any

from clag.errors import UserFacingError
from clag.llm.request_format import RequestFormat
from clag.llm.types import Request

#: what the check asks: a reply valid for a one-field schema, greedy, a few tokens
PREFLIGHT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"}},
                                    "required": ["answer"]}
PREFLIGHT_REQUEST = Request(prompt='Reply with the JSON object {"answer": "ok"}.',
                            json_schema=PREFLIGHT_SCHEMA, temperature=0.0, max_tokens=16, tag="preflight")
#: seconds the model list may take: a server that is up answers it at once
LIST_TIMEOUT_S = 10.0


class LLMUnreachable(UserFacingError):
    """The configured LLM server cannot answer; the message says what was tried and how to fix it."""


def served_models(backend: Any) -> list[str] | None:
    """The model ids the server lists, or None where it has no such list.

    A connection that fails is the one-line stop: nothing listens where ``llm.base_url`` points."""
    import openai

    from clag.llm.openai_backend import list_models

    try:
        listed = list_models(backend.base_url, backend.client.api_key, LIST_TIMEOUT_S)
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        raise LLMUnreachable(
            f"no LLM server answers at {backend.base_url} ({type(exc).__name__}: {exc}); start one "
            "(bash scripts/serve.sh <engine> <model>) or point llm.base_url at it") from None
    return None if listed is None else [str(model.id) for model in listed]


def check_server(backend: Any, request_format: RequestFormat) -> str | None:
    """Stop the run (:class:`LLMUnreachable`) unless ``backend`` (an OpenAI-compatible server)
    answers one request in the run's format; a warning line when it answers under a model name
    it does not list (llama.cpp and SGLang serve whatever they loaded, whatever the name)."""
    listed = served_models(backend)
    reply = backend.generate([request_format.apply(PREFLIGHT_REQUEST)])[0]
    named = listed is None or backend.model in listed
    if reply.finish_reason == "error":
        hint = "" if named else f"; the server lists {listed}, not llm.model={backend.model!r}"
        raise LLMUnreachable(f"the LLM server at {backend.base_url} refused a test request: "
                             f"{reply.extra.get('error', 'no reason given')}{hint}")
    if not named:
        return (f"warning: the server at {backend.base_url} lists {listed}, not llm.model={backend.model!r}; "
                "it answered anyway, and the request cache files its replies under llm.model")
    return None
