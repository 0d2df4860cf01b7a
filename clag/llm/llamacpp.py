"""The ``llamacpp`` backend: llama-cpp-python on a GGUF file, for fast CPU runs.

On a laptop-class CPU llama.cpp decodes a quantised small model several times faster than
transformers in bf16 and needs a fraction of the memory (docs/llm.md, "llama.cpp on CPU").
It runs one sequence at a time, so it gains nothing from batching; JSON schemas become GBNF
grammars (:mod:`clag.llm.gbnf`, which writes length bounds as bounded repetition; llama.cpp's
own converter for anything else), compiled once per schema. The same rules as the ``hf``
backend apply: a raw prompt is completed as it is, chat messages go through the GGUF's chat
template and the shared renderer; a prompt that does not fit the context keeps its end and is
counted as truncated; greedy when temperature is 0, else sampling with the policy's filters
(neutral by default) and the request seed. llama.cpp stops on every end-of-generation token the
GGUF declares, which is what the model's generation config lists for the ``hf`` backend.
Install with ``pip install -e .[llamacpp]`` (it compiles llama.cpp; see docs/install.md).
"""

from __future__ import annotations

import atexit
import json
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from clag.errors import UserFacingError
from clag.llm.decoding import DEFAULT_WHITESPACE_CHARS, DecodingPolicy, render_chat, sampling_report
from clag.llm.gbnf import UnsupportedSchema, schema_to_gbnf
from clag.llm.hf import weights_id
from clag.llm.request_format import RAW_PROMPTS_ID
from clag.llm.types import Completion, Request

#: tokens per sequence (per server slot) when ``llm.max_context`` is unset. llama-cpp-python's own
#: default, 512, is too small for memory prompts; 8,192 was too small for answer prompts that carry
#: every retrieved note's linked notes (up to ~8,900 tokens on BioASQ stream 3 once the notes were
#: well linked), which llama.cpp's server refuses outright. The KV cache is allocated up front
#: (Qwen2.5-Coder-0.5B by arithmetic: 24 layers x 2 KV heads x 64 dims x K,V x 2 bytes = 12 KiB a
#: token, so 8 slots x 16,384 take ~1.6 GB), hence not the model's 32k window.
DEFAULT_CONTEXT = 16384


def without_string_lengths(schema: Any) -> Any:
    """The schema without string ``maxLength``/``minLength``, for llama.cpp's own converter
    (used only for schemas :mod:`clag.llm.gbnf` does not cover): it spells a length bound as that
    many nested optional rules, and a few hundred of them overflow llama.cpp's grammar parser (a
    crash, not an error). The client still checks the parsed value against the full schema."""
    if isinstance(schema, dict):
        return {k: without_string_lengths(v) for k, v in schema.items()
                if k not in ("maxLength", "minLength")}
    if isinstance(schema, list):
        return [without_string_lengths(v) for v in schema]
    return schema


@lru_cache(maxsize=128)
def _grammar_source(schema_json: str, max_whitespace: int | None, whitespace_chars: str) -> tuple[str, str]:
    schema = json.loads(schema_json)
    try:
        return "gbnf", schema_to_gbnf(schema, max_whitespace, whitespace_chars)
    except UnsupportedSchema:      # llama.cpp's own converter, without the bounds that crash it
        return "json_schema", json.dumps(without_string_lengths(schema))


def grammar_source(schema: dict[str, Any], max_whitespace: int | None,
                   whitespace_chars: str = DEFAULT_WHITESPACE_CHARS) -> tuple[str, str]:
    """What a llama.cpp engine is given for ``schema``, in process or served — one rule for both:
    ``("gbnf", grammar)`` from :mod:`clag.llm.gbnf`, else ``("json_schema", schema as JSON)`` for
    llama.cpp's own converter. Memoised: a run asks the same few schemas thousands of times.

    The memo key keeps the schema's declared property order (no ``sort_keys``): the grammar makes
    the model write the fields in that order, and which field comes first changes what a small
    model writes (the reference's evolution asks ``should_evolve`` first; sorted keys put it
    fourth, after the actions it would justify)."""
    return _grammar_source(json.dumps(schema), max_whitespace, whitespace_chars)


#: bump when the way schemas become grammars changes: cached outputs of the old grammars are not reused
GRAMMAR_VERSION = "gbnf3"      # the whitespace cap follows the policy


def default_threads() -> int:
    """One thread per core, less one on machines with more than two: llama.cpp's decode collapses
    (measured 0.75–5 tokens/s against 13) when its threads compete with the harness's own."""
    cores = os.cpu_count() or 1
    return cores if cores <= 2 else cores - 1


def llamacpp_model_id(path: str, label: str, policy: DecodingPolicy) -> str:
    return f"llamacpp:{label}:{weights_id(path)}:{RAW_PROMPTS_ID}:{policy.identity()}:{GRAMMAR_VERSION}"


class LlamaCppBackend:
    def __init__(self, path: str, label: str, max_context: int | None = None,
                 threads: int | None = None, policy: DecodingPolicy | None = None) -> None:
        if Path(path).suffix != ".gguf" or not Path(path).is_file():
            raise UserFacingError(f"the llamacpp backend needs a GGUF file, not {path!r} (set llm.path)")
        try:
            from llama_cpp import Llama
        except ImportError:
            raise UserFacingError(
                "llm.backend=llamacpp needs llama-cpp-python: pip install -e .[llamacpp] "
                "(it compiles llama.cpp; see docs/install.md)") from None
        threads = int(threads or default_threads())
        self.n_ctx = int(max_context or DEFAULT_CONTEXT)
        self.policy = policy or DecodingPolicy()
        problem = self.policy.penalty_window_error("llama-cpp-python", counts_prompt=False)
        if problem:
            raise UserFacingError(problem)
        # the repetition penalty's window is fixed when the model is loaded (llama-cpp-python); it
        # holds only generated tokens: Llama.generate never feeds the prompt to the sampler
        last_n = self.policy.repeat_last_n if self.policy.repeat_last_n is not None else self.n_ctx
        self.model = Llama(model_path=str(path), n_ctx=self.n_ctx, n_threads=threads, n_threads_batch=threads,
                           last_n_tokens_size=last_n, verbose=False)
        # free the model before interpreter teardown, when llama-cpp-python's own cleanup fails noisily
        atexit.register(self.model.close)
        self.stop_token_ids = self._end_of_generation_ids()
        self.model_id = llamacpp_model_id(path, label, self.policy)
        self._grammars: dict[str, Any] = {}

    def _end_of_generation_ids(self) -> tuple[int, ...]:
        """The tokens llama.cpp ends a completion on (its end-of-generation set), plus the policy's."""
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(self.model.model)
        ids = [t for t in range(self.model.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)]
        return tuple(dict.fromkeys([*ids, *self.policy.stop_token_ids]))

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp import LlamaGrammar

        key = json.dumps(schema)          # declared property order: see grammar_source
        if key not in self._grammars:
            kind, source = grammar_source(schema, self.policy.max_whitespace, self.policy.whitespace_chars)
            self._grammars[key] = (LlamaGrammar.from_string(source, verbose=False) if kind == "gbnf"
                                   else LlamaGrammar.from_json_schema(source, verbose=False))
        return self._grammars[key]

    def _sampling(self, request: Request) -> dict[str, Any]:
        policy = self.policy
        kwargs: dict[str, Any] = {"max_tokens": request.max_tokens,
                                  "repeat_penalty": policy.repetition_penalty}
        if policy.stop_token_ids:      # llama.cpp takes extra stops as text
            kwargs["stop"] = [self.model.detokenize([t], special=True).decode("utf-8", errors="ignore")
                              for t in policy.stop_token_ids]
        if request.temperature <= 0:
            kwargs.update(temperature=0.0, top_k=1, top_p=1.0, min_p=0.0)
        else:
            kwargs.update(temperature=request.temperature, top_k=policy.top_k, top_p=policy.top_p,
                          min_p=policy.min_p, seed=request.seed if request.seed is not None else 0)
        if request.json_schema is not None:
            kwargs["grammar"] = self._grammar(request.json_schema)
        return kwargs

    def render(self, request: Request) -> str:
        """The text the model completes: the raw prompt, or the chat rendered by the shared renderer."""
        if request.prompt is not None:
            return request.prompt
        template = self.model.metadata.get("tokenizer.chat_template")
        if not template:
            raise UserFacingError(f"{self.model_id}: the GGUF has no chat template; "
                                  "use profile.request_format=raw")
        eos = self.model.detokenize([self.model.token_eos()], special=True).decode("utf-8", errors="ignore")
        bos = self.model.detokenize([self.model.token_bos()], special=True).decode("utf-8", errors="ignore")
        return render_chat(template, request.text_for_chat(), bos_token=bos, eos_token=eos,
                           enable_thinking=self.policy.enable_thinking)

    def sampling_report(self, request: Request) -> dict[str, Any]:
        """What decodes ``request`` here, in the terms every backend reports (conformance)."""
        return sampling_report(self.policy, request, self.render(request), self.stop_token_ids)

    def _prompt_tokens(self, request: Request) -> tuple[list[int], bool]:
        """The prompt as tokens, cut to fit the context with room for the answer (keeping its end)."""
        text = self.render(request)
        special = request.prompt is None     # a chat rendering holds the template's special tokens
        tokens = self.model.tokenize(text.encode("utf-8"), add_bos=not special, special=special)
        budget = max(1, self.n_ctx - request.max_tokens)
        return tokens[-budget:], len(tokens) > budget

    def generate(self, requests: list[Request]) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _one(self, request: Request) -> Completion:
        tokens, cut = self._prompt_tokens(request)
        started = time.perf_counter()
        result = self.model.create_completion(prompt=tokens, **self._sampling(request))
        elapsed = time.perf_counter() - started
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        return Completion(text=choice["text"], prompt_tokens=int(usage.get("prompt_tokens", len(tokens))),
                          completion_tokens=int(usage.get("completion_tokens", 0)), latency_s=elapsed,
                          finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
                          extra={"prompt_truncated": True} if cut else {})
