"""From a ``method`` config to what the runner needs: fresh memories, an answerer, a ledger.

A method is one YAML file, ``configs/method/<name>.yaml``, whose ``memory._target_`` names its
memory class (Hydra instantiates it with the file's other keys, and with the shared resources
its constructor asks for: ``embedder``, ``llm``, ``seed``, ``prompts``, ``content_format``).
There is no second list of names: adding a method is one class and one YAML file. A method that
needs its own runner wiring names a builder (``builder: "package.module:function"``) taking the
resolved config and returning a :class:`MethodRun`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clag.types import MemorySystem, Sample
from eval.method_run import Answer, Answerer, MethodRun

if TYPE_CHECKING:         # the run's heavy modules load when a run builds its method, not on import
    from clag.embed import Embedder
    from clag.llm.client import LLMClient
    from clag.llm.ledger import Ledger
    from clag.prompt_sets import PromptSet

__all__ = ["Answer", "Answerer", "MethodBuilder", "MethodRun", "RunResources", "build_method",
           "build_standard"]


MethodBuilder = Callable[[Mapping[str, Any]], MethodRun]


def build_method(cfg: Mapping[str, Any]) -> MethodRun:
    """The method of a resolved run config: its own ``builder`` if it names one, else
    :func:`build_standard` on its ``memory._target_``."""
    import importlib

    from eval.errors import ConfigError
    from eval.resources import group_choices

    method_cfg = cfg.get("method")
    if not method_cfg:
        valid = ", ".join(group_choices("method")) or "none yet"
        raise ConfigError(f"choose a memory system with method=<name> (valid: {valid})")
    builder = method_cfg.get("builder")
    if builder:
        module, _, attr = str(builder).partition(":")
        try:
            return getattr(importlib.import_module(module), attr)(cfg)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"method {method_cfg.get('name')!r}: builder {builder!r} not found "
                              f"({exc})") from None
    if not (method_cfg.get("memory") or {}).get("_target_"):
        raise ConfigError(f"method {method_cfg.get('name')!r} names no memory class "
                          "(method.memory._target_)")
    return build_standard(cfg)


def _accepted_kwargs(target: str, offered: dict[str, Any]) -> dict[str, Any]:
    """The shared resources (embedder, llm, ...) that the memory class's constructor takes."""
    import importlib
    import inspect

    module, _, name = target.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    params: set[str] = set()
    for klass in getattr(cls, "__mro__", (cls,)):      # a **kwargs constructor forwards to its base
        init = getattr(klass, "__init__", None) if isinstance(cls, type) else cls
        if init is None or init is object.__init__:
            continue
        signature = inspect.signature(init)
        params.update(signature.parameters)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
            break
    return {k: v for k, v in offered.items() if k in params}


@dataclass
class RunResources:
    """What every memory of a run shares: one LLM client (cache, ledger, request format), one
    embedder, the prompt set, and the answer step."""

    client: LLMClient
    ledger: Ledger
    embedder: Embedder | None
    prompts: PromptSet
    answerer: Answerer
    profile: dict[str, Any]


def run_resources(cfg: Mapping[str, Any]) -> RunResources:
    """The run's shared resources, built once from the resolved config."""
    from hydra.utils import instantiate

    from clag.embed import Embedder
    from clag.llm.ledger import Ledger
    from clag.llm.models import build_client
    from eval.answer import PaperAnswerer
    from eval.errors import ConfigError
    from eval.prompt_source import build_prompt_set, build_request_format

    if not cfg.get("llm"):
        raise ConfigError(f"method {cfg['method']['name']!r} needs an LLM to answer: add llm=<name>")
    ledger = Ledger()
    concurrency = dict(cfg.get("concurrency") or {})
    concurrent = int(concurrency.get("streams", 1)) * int(concurrency.get("questions", 1)) > 1
    client = build_client(cfg["llm"], run_seed=int(cfg["seed"]), ledger=ledger,
                          micro_batch=concurrency if concurrent else None, progress=bool(cfg.get("progress")))
    client.prefetch_chunk = int((cfg.get("batching") or {}).get("prefetch_chunk", client.prefetch_chunk))
    profile = dict(cfg.get("profile") or {})
    prompts = build_prompt_set(profile, cfg.get("data"))
    client.request_format = build_request_format(cfg)
    if cfg["method"].get("answerer"):      # a method with its own answer step (MemoryOS)
        answerer = instantiate(dict(cfg["method"]["answerer"]), client=client, seed=int(cfg["seed"]))
    else:
        answerer = PaperAnswerer(client, seed=int(cfg["seed"]), prompts=prompts, **cfg["answer"])
    embedder = Embedder(**cfg["embedder"]) if cfg.get("embedder") else None
    return RunResources(client, ledger, embedder, prompts, answerer, profile)


def memory_factory(cfg: Mapping[str, Any], resources: RunResources
                   ) -> tuple[Callable[[Sample], MemorySystem], MemorySystem, bool]:
    """A fresh memory per stream (Hydra's ``_target_`` with the file's keys and the resources its
    constructor names), one built now so a bad option fails before any run directory exists,
    and whether the run's prompt set is the one its calls use."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    from eval.errors import ConfigError

    memory_cfg = dict(cfg["method"]["memory"])
    shared = _accepted_kwargs(memory_cfg["_target_"], {
        "embedder": resources.embedder, "llm": resources.client, "seed": int(cfg["seed"]),
        "content_format": cfg["data"].get("content_format", "reference"), "prompts": resources.prompts})

    def make_memory(sample: Sample) -> MemorySystem:
        return instantiate(memory_cfg, **shared)

    try:
        probe = make_memory(None)  # type: ignore[arg-type]
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        raise ConfigError(f"method {cfg['method']['name']!r}: {cause}") from None
    if not isinstance(probe, MemorySystem):
        raise ConfigError(f"method {cfg['method']['name']!r}: {memory_cfg['_target_']} is not a "
                          "clag.types.MemorySystem (subclass it: docs/methods.md)")
    # GAM's and MemoryOS's own calls keep this project's wording under every profile: their
    # references are other repositories, not the CLAG files the reference prompt set reads
    uses_prompt_set = "prompts" in shared or not cfg["method"].get("answerer")
    return make_memory, probe, uses_prompt_set


def engine_report(client: LLMClient) -> dict[str, Any]:
    """What served the requests beyond the model id: servers this process started (command, log,
    start-up time) and what the micro-batcher merged."""
    from clag.llm.batcher import MicroBatcher
    from clag.llm.llama_server import running_servers

    report: dict[str, Any] = {}
    servers = running_servers()
    if servers:     # llm.server=auto: the engine behind the requests, and where its log is
        report["servers"] = [{"command": s.spec.command(s.port)[1:], "log": str(s.log_path),
                              "startup_s": round(s.started_s, 2)} for s in servers]
    if isinstance(client.backend, MicroBatcher) and client.backend.batch_sizes:
        sizes = client.backend.batch_sizes
        report["micro_batches"] = {"backend_calls": len(sizes), "requests": sum(sizes),
                                   "max_batch": max(sizes)}
    return report


def ledger_report(cfg: Mapping[str, Any], resources: RunResources, uses_prompt_set: bool) -> dict[str, Any]:
    """``ledger.json``: the model, profile, request format, prompt set and decoding beside the counts."""
    from clag.llm.models import decoding_report

    client, prompts = resources.client, resources.prompts
    return {"model_id": client.model_id, "profile": resources.profile.get("name"),
            "request_format": client.request_format.to_dict(),
            "prompt_set": prompts.identity if uses_prompt_set else None,
            "prompt_files": [portable_path(f, cfg.get("data") or {}) for f in prompts.files]
            if uses_prompt_set else [],
            "decoding": decoding_report(cfg["llm"], client.backend), **resources.ledger.to_dict(),
            **engine_report(client)}


def portable_path(path: Path, data_cfg: Mapping[str, Any]) -> str:
    """A file under the data root as ``<data root>/…`` (records stay the same on any machine and
    name no local folder); any other file as it is."""
    from eval.data.sources import data_root
    from eval.errors import DataError

    try:
        return f"<data root>/{Path(path).resolve().relative_to(data_root(data_cfg.get('root')).resolve())}"
    except (ValueError, OSError, DataError):     # not under the root, or no root to be under
        return str(path)


def build_standard(cfg: Mapping[str, Any]) -> MethodRun:
    """A memory system from ``method.memory`` (Hydra ``_target_``) + the paper's answer step:
    resources → memories → the runner's view of them."""
    from clag.llm.calllog import CallLog
    from clag.llm.models import backend_kind
    from clag.placeholders import method_placeholders, placeholders

    resources = run_resources(cfg)
    make_memory, probe, uses_prompt_set = memory_factory(cfg, resources)
    client = resources.client

    def record_calls(path: Path) -> None:
        client.call_log = CallLog(path)

    return MethodRun(make_memory, resources.answerer, lambda: ledger_report(cfg, resources, uses_prompt_set),
                     client.scope, bool(cfg.get("batching", {}).get("prefetch_ingest", False)),
                     record_calls=record_calls,
                     placeholders={**(placeholders(resources.prompts) if uses_prompt_set else {}),
                                   **method_placeholders(type(probe))},
                     check_llm=lambda: backend_kind(cfg["llm"]).preflight(cfg["llm"], client.request_format))
