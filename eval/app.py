"""The Hydra app behind ``python -m eval run``: one resolved config → one run directory."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import hydra
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from clag.errors import UserFacingError
from eval.identity import config_hash, semantic_config
from eval.resources import CONFIG_DIR

#: (overrides, message) of every job of this process that failed with a user error
FAILED_JOBS: list[tuple[str, str]] = []


#: libraries whose INFO logs (model loading, AVX probing) would drown the run's own output
QUIET_LOGGERS = ("sentence_transformers", "faiss", "transformers", "httpx", "httpx2", "httpcore2", "openai",
                 "datasets")


def execute(cfg: DictConfig) -> Path:
    """Load the data, build the method, run every stream, write the run directory."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    from eval.data import load_dataset
    from eval.labels import describe
    from eval.methods import build_method
    from eval.results import (
        claim_run_directory,
        earlier_cpu,
        environment,
        latest_complete_run,
        record_resume,
        write_json,
    )
    from eval.runner import run_dataset, write_status
    from eval.scoring import format_summary

    cpu_started = time.process_time()
    resolved = OmegaConf.to_container(cfg, resolve=True)
    from eval.tracking import check_logger

    check_logger(resolved.get("logger"))
    names = describe(resolved)
    chash = config_hash(semantic_config(resolved))
    if resolved.get("skip_complete"):
        done = latest_complete_run(Path(resolved["results_root"]), names["data"], names["method"],
                                   names["llm"], chash)
        if done is not None:
            print(f"already complete, not run again (skip_complete=true): {done}", flush=True)
            return done
    dataset = load_dataset(resolved["data"])
    if dataset.num_questions == 0:
        raise UserFacingError(
            f"the {dataset.name} subset holds no question to answer ({len(dataset.samples)} stream(s), "
            f"{dataset.num_turns:,} turns; data.subset: {_subset_text(resolved['data'])}); "
            "keep more turns (data.subset.turns, data.subset.answerable) or pick streams that "
            "answer (data.subset.pick=most_answerable)")
    method = build_method(resolved)
    warning = method.check_llm()        # a server that cannot answer stops the run here, at once
    if warning:
        print(warning, flush=True)
    run_dir, resumed = claim_run_directory(Path(resolved["results_root"]), names["data"], names["method"],
                                           names["llm"], chash)
    earlier = earlier_cpu(run_dir) if resumed else (0.0, True)
    if resumed:
        print(f"resuming the interrupted run in {run_dir}", flush=True)
        record_resume(run_dir)
    else:
        OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
        env = environment({"run": resolved["seed"]})
        env["data"] = dataset.summary()
        env["profile"] = resolved.get("profile")
        env["overrides"] = command_overrides()
        if resolved.get("llm"):
            from clag.llm.models import decoding_report

            env["decoding"] = decoding_report(resolved["llm"])
        write_json(run_dir / "env.json", env)
    write_status(run_dir, "running", resumed=resumed)
    method.record_calls(run_dir / "calls.jsonl")
    if method.placeholders:
        write_json(run_dir / "placeholders.json", method.placeholders)
    from clag.llm.llama_server import set_log_dir

    set_log_dir(run_dir)            # a server this run starts (llm.server=auto) logs here
    try:
        snapshot_root = Path(resolved["snapshot_dir"]) if resolved.get("snapshot_dir") else None
        concurrency = resolved.get("concurrency") or {}
        metrics = run_dataset(dataset, method, run_dir, progress=bool(resolved["progress"]),
                              snapshot_root=snapshot_root, config_hash=chash,
                              streams=int(concurrency.get("streams", 1)),
                              questions=int(concurrency.get("questions", 1)))
    except KeyboardInterrupt:
        write_status(run_dir, "interrupted", **process_cost(cpu_started, *earlier))
        raise RunInterrupted(run_dir) from None
    except BaseException as exc:
        write_status(run_dir, "failed", error=f"{type(exc).__name__}: {exc}",
                     **process_cost(cpu_started, *earlier))
        raise
    from eval.tracking import log_run

    ledger = json.loads((run_dir / "ledger.json").read_text())
    log_run(resolved.get("logger"), resolved, run_dir, metrics, ledger)
    from clag.llm.ledger import every_call_failed
    from eval.health import health_report, summary_line

    report = health_report(run_dir)
    write_json(run_dir / "health.json", report)
    failed = every_call_failed(ledger.get("total", {}))
    if failed:
        write_status(run_dir, "failed", error=failed, **process_cost(cpu_started, *earlier))
        raise UserFacingError(f"{failed} ({run_dir})")
    write_status(run_dir, "complete", **process_cost(cpu_started, *earlier))
    print(what_ran(resolved, dataset, run_dir))
    print(format_summary(metrics))
    print(summary_line(report))
    print(f"run directory: {run_dir}")
    return run_dir


def process_cost(cpu_started: float, earlier_s: float = 0.0, earlier_whole: bool = True) -> dict[str, Any]:
    """This run's CPU seconds (every thread of the process: the harness, and an in-process model)
    and the process's peak resident memory so far, for ``status.json`` and the benchmarks.

    A resumed run adds what its earlier processes recorded when they stopped, so ``cpu_s`` is the
    run's, not its last start's; ``cpu_whole`` is false when an earlier process was killed before
    it could record its share (that share is missing from ``cpu_s``)."""
    import resource

    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss      # KiB on Linux
    return {"cpu_s": round(earlier_s + time.process_time() - cpu_started, 2), "cpu_whole": earlier_whole,
            "peak_rss_mib": round(peak_kib / 1024, 1)}


def _subset_text(data_cfg: dict) -> str:
    subset = {k: v for k, v in (data_cfg.get("subset") or {}).items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in subset.items()) or "none"


def command_overrides() -> list[str]:
    """The overrides the command gave this job (a sweep: this job's), as Hydra parsed them: kept
    in ``env.json`` so tables tell a method's variants (``method.memory.retriever=bm25``) apart."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


class RunInterrupted(Exception):
    """Ctrl-C during a run: its directory keeps every committed row and resumes."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


def stop_now(message: str) -> None:
    """Leave at once after Ctrl-C: stop the servers we started, say one line, exit 130.

    ``os._exit`` and not ``sys.exit``: worker threads still inside a model call (llama.cpp,
    torch) would otherwise be torn down by the interpreter's exit, which aborts the process
    ("terminate called without an active exception"). Every committed row is already on disk."""
    from clag.llm.llama_server import stop_all

    stop_all()
    print(message, file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)


def prompt_form(resolved: dict) -> str:
    """How the prompts reached the model: the run's request format."""
    from clag.llm.request_format import describe_format
    from eval.labels import request_format_name

    return describe_format(request_format_name(resolved))


def what_ran(resolved: dict, dataset, run_dir: Path) -> str:
    """One paragraph a user can read: what was run on what, and what it cost."""
    llm = resolved.get("llm") or {}
    ledger = json.loads((run_dir / "ledger.json").read_text()).get("total", {})
    calls, hits = ledger.get("calls", 0), ledger.get("cache_hits", 0)
    return (f"ran {resolved['method']['name']} on {dataset.name}: {len(dataset.samples)} stream(s), "
            f"{dataset.num_turns:,} turns, {dataset.num_questions:,} questions; LLM "
            f"{llm.get('name', 'none')} ({prompt_form(resolved)}): {calls} calls, "
            f"{hits} from cache, {ledger.get('parse_failures', 0)} unparsable")


SWEEP_STATUS = "sweep_status.jsonl"


def record_sweep_job(sweep_dir: Path, num: int, label: str, outcome: str, error: str | None) -> None:
    """One line per finished job, appended by the job's own process (any launcher)."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"job": num, "overrides": label, "outcome": outcome, "error": error})
    with (sweep_dir / SWEEP_STATUS).open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


class SweepSummary(Callback):
    """After a multirun (in the launching process): which jobs completed and which failed, why."""

    failed: int = 0

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        path = Path(config.hydra.sweep.dir) / SWEEP_STATUS
        jobs = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
        failed = [j for j in jobs if j["outcome"] != "complete"]
        SweepSummary.failed = len(failed)
        print(f"sweep finished: {len(jobs) - len(failed)} complete, {len(failed)} failed "
              f"(status: {path})", flush=True)
        for job in sorted(failed, key=lambda j: j["job"]):
            print(f"  failed #{job['job']} [{job['overrides']}]: {job['error']}", file=sys.stderr)


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_cfg = HydraConfig.get()
    sweeping = hydra_cfg.mode == RunMode.MULTIRUN
    label = " ".join(hydra_cfg.overrides.task)
    outcome = "failed"
    try:
        run_dir = execute(cfg)
    except RunInterrupted as stopped:
        stop_now(f"interrupted: {stopped.run_dir} keeps what finished; run the same command to resume it")
    except KeyboardInterrupt:
        stop_now("interrupted before the run started")
    except UserFacingError as exc:
        if cfg.get("debug"):
            raise
        print(f"error: {exc}", file=sys.stderr)
        FAILED_JOBS.append((label, str(exc)))
        if not sweeping:
            raise SystemExit(2) from None
    except Exception as exc:
        # in a sweep, one broken job must not stop the others: report it and go on
        if not sweeping or cfg.get("debug"):
            raise
        traceback.print_exc()
        FAILED_JOBS.append((label, f"{type(exc).__name__}: {exc}"))
    else:
        outcome = "complete"
        if sweeping:
            print(f"[sweep] run directory: {run_dir}")
    if sweeping:
        error = FAILED_JOBS[-1][1] if outcome == "failed" else None
        record_sweep_job(Path(hydra_cfg.sweep.dir), hydra_cfg.job.num, label, outcome, error)
        print(f"[sweep] job #{hydra_cfg.job.num} {outcome}: {label}", flush=True)
