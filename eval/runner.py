"""Streams → memory → questions → scored predictions, written to a run directory.

A fresh memory system is built per stream (one LoCoMo conversation, one HotpotQA/BioASQ chunk);
its turns are ingested in order, ``finalize`` runs, then its questions are answered with memory
read-only. Every answered question is scored and appended durably the moment it exists.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from clag.types import Sample
from eval.data.contract import Dataset
from eval.methods import MethodRun
from eval.metrics import aggregate, score_prediction
from eval.results import PredictionLog, write_json


def answer_stream(sample: Sample, method: MethodRun, log: PredictionLog,
                  progress: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ingest one stream, answer its questions; returns the scored rows and memory stats."""
    memory = method.make_memory(sample)
    started = time.perf_counter()
    for turn in tqdm(sample.turns, desc=f"ingest {sample.id}", disable=not progress, leave=False):
        memory.ingest(turn)
    memory.finalize()
    ingest_seconds = time.perf_counter() - started
    rows = []
    for question in tqdm(sample.questions, desc=f"answer {sample.id}", disable=not progress,
                         leave=False):
        t0 = time.perf_counter()
        retrieval = memory.retrieve(question)
        t1 = time.perf_counter()
        answer = method.answer(question, retrieval)
        t2 = time.perf_counter()
        true_answer = question.extra.get("true_answer")
        row = {
            "sample_id": sample.id,
            "question_id": question.id,
            "question": question.text,
            "category": question.category,
            "prediction": answer.text,
            "answer": question.answer,
            "true_answer": true_answer,
            "evidence": list(question.evidence),
            "retrieved_ids": list(retrieval.turn_ids),
            "scores": score_prediction(answer.text, question.answer, question.category,
                                       retrieval.turn_ids, question.evidence, true_answer),
            "latency_s": {"retrieve": t1 - t0, "answer": t2 - t1},
            "retrieval_debug": retrieval.debug,
            "answer_debug": answer.debug,
        }
        log.append(row)
        rows.append(row)
    stats = {"sample_id": sample.id, "turns": len(sample.turns),
             "ingest_seconds": ingest_seconds, **memory.stats()}
    return rows, stats


def run_dataset(dataset: Dataset, method: MethodRun, run_dir: Path,
                progress: bool = True) -> dict[str, Any]:
    """Answer every stream of ``dataset``; writes predictions, metrics, stats and the ledger."""
    all_rows: list[dict[str, Any]] = []
    stats = []
    with PredictionLog(run_dir / "predictions.jsonl") as log:
        for sample in tqdm(dataset.samples, desc=dataset.name, disable=not progress):
            rows, sample_stats = answer_stream(sample, method, log, progress)
            all_rows.extend(rows)
            stats.append(sample_stats)
    metrics = aggregate((r["category"], r["scores"]) for r in all_rows)
    write_json(run_dir / "metrics.json", metrics)
    write_json(run_dir / "memory_stats.json", stats)
    write_json(run_dir / "ledger.json", method.ledger())
    return metrics


def write_status(run_dir: Path, state: str, **details: Any) -> None:
    write_json(run_dir / "status.json", {"state": state, "time": time.time(), **details})


def describe(cfg: Mapping[str, Any]) -> dict[str, str]:
    """The names a run directory is filed under."""
    method = cfg.get("method") or {}
    llm = cfg.get("llm") or {}
    return {"data": str(cfg["data"]["name"]), "method": str(method.get("name", "none")),
            "llm": str(llm.get("name", "none"))}
