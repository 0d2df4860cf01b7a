"""The LLM layer: one protocol, backend kinds in one table, a request cache and a call ledger.

Memory systems call :class:`~clag.llm.client.LLMClient`, which wraps any backend with the
cache (reruns make zero calls), seed derivation, JSON parsing and the per-tag ledger, so none
of that lives inside a backend.
"""

from clag.llm.types import LLM, Completion, Request

__all__ = ["LLM", "Completion", "Request"]
