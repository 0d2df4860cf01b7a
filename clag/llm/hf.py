"""The ``hf`` backend: transformers on CPU or GPU, batched, JSON-schema-constrained by xgrammar.

- Loads a local HF folder, or a GGUF file which is converted once into a cached safetensors
  folder (a GGUF load dequantises every tensor each time, ~18 s for SmolLM2; the converted folder
  loads in ~2 s with bit-identical logits).
- Batches with left padding; one ``generate`` per group of requests that share sampling
  parameters and schema.
- Schemas are enforced by xgrammar's logits processor (under 1% of decode time on CPU), with the
  model's natural whitespace allowed up to the policy's cap, so small models neither go
  off-distribution nor emit whitespace forever.
- A raw prompt is completed as it is (what the paper sent to SGLang); a chat-message request
  (the run's request format decides which a prompt becomes, :mod:`clag.llm.request_format`)
  renders with the shared renderer of :mod:`clag.llm.decoding`, thinking as the policy says.
- Stop tokens, sampling filters and the whitespace cap come from the
  :class:`~clag.llm.decoding.DecodingPolicy`; sampling draws per row
  (:mod:`clag.llm.row_sampling`), so a request's completion never depends on its batch.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from clag.errors import UserFacingError
from clag.files import cache_home, sha256_memo
from clag.llm.decoding import (
    DEFAULT_WHITESPACE_CHARS,
    DecodingPolicy,
    render_chat,
    sampling_report,
    stop_token_ids,
)
from clag.llm.request_format import RAW_PROMPTS_ID
from clag.llm.types import Completion, Request


def default_model_cache() -> Path:
    return cache_home("models")


def weights_id(path: str) -> str:
    """What identifies the weights in cache keys: a GGUF's checksum, else the path or hub id."""
    source = Path(path).expanduser()
    if source.suffix == ".gguf" and source.is_file():
        return f"gguf:{sha256_memo(source)[:16]}"
    return path


#: bump when the hf backend's decoding changes in a way the policy does not name
HF_DECODER_VERSION = "rows1"     # per-row generators (the batch-wide RNG is gone)


def hf_model_id(path: str, label: str, policy: DecodingPolicy, dtype: str) -> str:
    return f"hf:{label}:{weights_id(path)}:{RAW_PROMPTS_ID}:{dtype}:{policy.identity()}:{HF_DECODER_VERSION}"


def resolve_device_dtype(device: str, dtype: str) -> tuple[str, str]:
    """``auto`` device: CUDA when visible. ``auto`` dtype: float32 on CPU — measured
    batch-invariant (a row's tokens do not change with its batch's padding), where bf16's
    rounding differs with padding and flipped sampled tokens — and bfloat16 on GPU."""
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    dtype = ("float32" if device == "cpu" else "bfloat16") if dtype == "auto" else dtype
    return device, dtype


def convert_gguf(gguf: Path, cache_root: Path | None = None) -> Path:
    """A plain bf16 safetensors folder for ``gguf``, built once and reused (keyed by checksum and
    by transformers' major version: a folder saved by transformers 5 names tokenizer classes that
    transformers 4 cannot load, and the other way round)."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    digest = sha256_memo(gguf)[:16]
    major = transformers.__version__.split(".")[0]
    target = (cache_root or default_model_cache()) / f"{gguf.stem}-{digest}-transformers{major}"
    if (target / "config.json").is_file():
        return target
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    plain.load_state_dict({k: v.to(torch.bfloat16) for k, v in loaded.state_dict().items()})
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    loaded.generation_config.save_pretrained(tmp)
    if target.exists():  # another process converted it meanwhile
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, target)
    return target


class HFBackend:
    """transformers generation behind the :class:`~clag.llm.types.LLM` protocol."""

    def __init__(
        self,
        path: str,
        label: str,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 4,
        policy: DecodingPolicy | None = None,
        threads: int | None = None,
        model_cache: str | None = None,
        max_context: int | None = None,
        revision: str | None = None,
        token_budget: int | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(int(threads))
        source = Path(path).expanduser()
        if source.suffix == ".gguf" and source.is_file():
            source = convert_gguf(source, Path(model_cache) if model_cache else None)
        self.device, dtype = resolve_device_dtype(device, dtype)
        self.tokenizer = AutoTokenizer.from_pretrained(str(source), padding_side="left", revision=revision)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.dtype = dtype
        self.model = AutoModelForCausalLM.from_pretrained(
            str(source), dtype=getattr(torch, dtype), revision=revision).to(self.device).eval()
        #: the hub commit the weights came from (None for local folders): recorded in the ledger
        self.loaded_revision = getattr(self.model.config, "_commit_hash", None) or revision
        self.batch_size = max(1, int(batch_size))
        self.policy = policy or DecodingPolicy()
        generation_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        self.stop_token_ids = stop_token_ids(generation_eos, self.tokenizer.eos_token_id,
                                             self.policy.stop_token_ids)
        source_id = f"{path}@{revision}" if revision else path
        self.model_id = hf_model_id(source_id, label, self.policy, self.dtype)
        window = getattr(self.model.config, "max_position_embeddings", 0) or 32768
        self.max_context = int(max_context or window)
        from clag.llm.token_budget import free_memory, kv_bytes_per_token
        from clag.llm.token_budget import token_budget as budget_for

        #: KV cache per token, and the tokens (rows × padded length) one batch may hold: given, or
        #: half the memory free once the weights are in (the ledger reports both)
        dtype_bytes = torch.finfo(getattr(torch, dtype)).bits // 8
        self.kv_bytes_per_token = kv_bytes_per_token(self.model.config, dtype_bytes)
        free = None if token_budget else free_memory(self.device)
        self.token_budget = int(token_budget) if token_budget else (
            budget_for(free, self.kv_bytes_per_token) if free else None)
        #: benchmarks only: unconstrained rows decode exactly max_tokens (end tokens suppressed)
        self.fixed_length = False
        self._compiler: Any = None
        self._grammars: dict[str, Any] = {}

    # ---- prompts ------------------------------------------------------------------------------

    def render(self, request: Request) -> str:
        if request.prompt is not None:
            return request.prompt
        template = self.tokenizer.chat_template
        if not template:
            raise UserFacingError(f"{self.model_id}: the tokenizer has no chat template; "
                                  "use profile.request_format=raw")
        return render_chat(template, request.text_for_chat(), bos_token=self.tokenizer.bos_token or "",
                           eos_token=self.tokenizer.eos_token or "",
                           enable_thinking=self.policy.enable_thinking)

    def sampling_report(self, request: Request) -> dict[str, Any]:
        """What decodes ``request`` here, in the terms every backend reports (conformance)."""
        return sampling_report(self.policy, request, self.render(request), self.stop_token_ids)

    # ---- grammar ------------------------------------------------------------------------------

    def _grammar(self, schema: dict[str, Any]) -> Any:
        try:
            import xgrammar as xgr
        except ImportError as exc:
            raise UserFacingError(
                "JSON-schema decoding needs xgrammar: run "
                "`pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2`") from exc

        key = json.dumps(schema)      # declared property order: xgrammar writes the fields in it
        if key not in self._grammars:
            if self._compiler is None:
                info = xgr.TokenizerInfo.from_huggingface(
                    self.tokenizer, vocab_size=self.model.config.vocab_size,
                    stop_token_ids=list(self.stop_token_ids))
                self._compiler = xgr.GrammarCompiler(info, max_threads=2)
            if self.policy.whitespace_chars == DEFAULT_WHITESPACE_CHARS and self.policy.max_whitespace != 0:
                self._grammars[key] = self._compiler.compile_json_schema(
                    key, any_whitespace=True, max_whitespace_cnt=self.policy.max_whitespace)
            else:   # xgrammar's JSON rule has no choice of characters and no cap of 0: the GBNF does
                from clag.llm.gbnf import UnsupportedSchema, schema_to_gbnf

                try:
                    grammar = schema_to_gbnf(schema, self.policy.max_whitespace, self.policy.whitespace_chars)
                except UnsupportedSchema as exc:
                    raise UserFacingError(f"llm.whitespace_chars={self.policy.whitespace_chars!r} needs a "
                                          f"schema the grammar writer supports: {exc}") from None
                self._grammars[key] = self._compiler.compile_grammar(grammar)
        return self._grammars[key]

    # ---- generation ---------------------------------------------------------------------------

    def generate(self, requests: list[Request]) -> list[Completion]:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            groups[json.dumps([r.temperature, r.json_schema])].append(i)   # property order counts
        from clag.llm.token_budget import plan_batches

        out: list[Completion | None] = [None] * len(requests)
        for indices in groups.values():
            ids = [self.tokenizer(self.render(requests[i]), add_special_tokens=False)["input_ids"]
                   for i in indices]
            news = [requests[i].max_tokens for i in indices]
            kept = [min(len(row), max(1, self.max_context - new)) for row, new in zip(ids, news)]
            for batch in plan_batches(kept, news, self.batch_size, self.token_budget):
                chunk = [indices[j] for j in batch]
                done = self._generate_batch([requests[i] for i in chunk], [ids[j] for j in batch])
                for i, completion in zip(chunk, done):
                    out[i] = completion
        return [c for c in out if c is not None]

    def _generate_batch(self, batch: list[Request], ids: list[list[int]]) -> list[Completion]:
        """One padded ``generate`` for ``batch`` (its prompts' token ids given)."""
        import torch

        max_new = max(r.max_tokens for r in batch)
        # a prompt longer than the context window keeps its end (the question and the
        # instructions come last in every prompt here), and the completion says so
        budget = max(1, self.max_context - max_new)
        cut = [len(row) > budget for row in ids]
        enc = self.tokenizer.pad({"input_ids": [row[-budget:] for row in ids]}, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        temperature = batch[0].temperature
        stops = list(self.stop_token_ids)
        # greedy decoding always: sampled rows draw inside RowSampler, each with its own generator
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": self.tokenizer.pad_token_id,
                                  "eos_token_id": stops, "do_sample": False, "temperature": None,
                                  "top_k": None, "top_p": None}
        processors: list[Any] = []
        whole_prompt_window = self.policy.repeat_last_n is None and self.policy.repeat_window_includes_prompt
        if self.policy.penalises and whole_prompt_window:
            kwargs["repetition_penalty"] = self.policy.repetition_penalty
        elif self.policy.penalises:
            from clag.llm.row_sampling import WindowedRepetitionPenalty

            # the padded prompt's length: generated tokens start there in every row
            start = None if self.policy.repeat_window_includes_prompt else enc["input_ids"].shape[1]
            processors.append(WindowedRepetitionPenalty(self.policy.repetition_penalty,
                                                        self.policy.repeat_last_n, generated_from=start))
        if self.fixed_length and batch[0].json_schema is None:
            kwargs["min_new_tokens"] = max_new
        if batch[0].json_schema is not None:
            import xgrammar as xgr

            processors.append(xgr.contrib.hf.LogitsProcessor(self._grammar(batch[0].json_schema)))
        if temperature > 0:
            from clag.llm.row_sampling import RowSampler

            processors.append(RowSampler([r.seed if r.seed is not None else 0 for r in batch], temperature,
                                         self.device, top_k=self.policy.top_k, top_p=self.policy.top_p,
                                         min_p=self.policy.min_p))
        if processors:
            kwargs["logits_processor"] = processors
        started = time.perf_counter()
        with torch.inference_mode():
            generated = self.model.generate(**enc, **kwargs)
        elapsed = time.perf_counter() - started
        prompt_len = enc["input_ids"].shape[1]
        completions = []
        for row, request in enumerate(batch):
            new_tokens = generated[row, prompt_len:].tolist()
            end = next((k for k, t in enumerate(new_tokens) if t in self.stop_token_ids), None)
            ended = end is not None
            if ended:
                new_tokens = new_tokens[:end]
            new_tokens = [t for t in new_tokens if t != self.tokenizer.pad_token_id]
            # a row of a batch may run past its own cap while a longer row finishes: cut it there
            truncated = not ended or len(new_tokens) > request.max_tokens
            new_tokens = new_tokens[:request.max_tokens]
            completions.append(Completion(
                text=self.tokenizer.decode(new_tokens, skip_special_tokens=True),
                prompt_tokens=int(enc["attention_mask"][row].sum()),
                completion_tokens=len(new_tokens),
                latency_s=elapsed / len(batch),
                finish_reason="length" if truncated else "stop",
                extra={"prompt_truncated": True} if cut[row] else {},
            ))
        return completions
