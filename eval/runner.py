"""Streams → memory → questions → scored predictions, written to a run directory; resumable.

A fresh memory system is built per stream (one LoCoMo conversation, one HotpotQA/BioASQ chunk);
its turns are ingested in order, ``finalize`` runs, and the memory is snapshotted; then its
questions are answered with memory read-only. Every answered question is scored and appended
(and fsynced) the moment it exists. Rerunning into the same directory resumes: questions already
in ``predictions.jsonl`` are skipped, a stream whose snapshot exists is restored instead of
re-ingested, and the LLM cache serves any call made before the interruption.

``predictions.jsonl`` holds only deterministic fields, so an interrupted-and-resumed run writes
byte for byte what an uninterrupted one writes; wall-clock timings go to ``timings.jsonl``.

Concurrency (``concurrency.streams``, ``concurrency.questions``): streams run in threads, and so
do the questions of a stream when its memory is read-only at question time
(``MemorySystem.concurrent_reads``). Seeds are scoped per stream and per question, so the answers are
those of the one-at-a-time path; a stream's rows are committed in question order, and the file is
put back in dataset order at the end.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from clag.llm.ledger import summed_reports
from clag.pools import interruptible_pool
from clag.types import MemorySystem, Question, Sample
from eval import snapshots
from eval.data.contract import Dataset
from eval.method_run import MethodRun
from eval.metrics import aggregate, score_prediction
from eval.results import PredictionLog, write_json


def committed_rows(path: Path) -> list[dict[str, Any]]:
    """Rows already committed; a torn last line (a kill mid-write) is cut off the file."""
    if not path.is_file():
        return []
    raw = path.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1]
    if len(complete) != len(raw):
        with path.open("r+b") as handle:
            handle.truncate(len(complete))
            handle.flush()
            os.fsync(handle.fileno())
    return [json.loads(line) for line in complete.decode("utf-8").splitlines() if line.strip()]


def prepare_memory(sample: Sample, method: MethodRun, snapshot: Path | None,
                   progress: bool) -> tuple[MemorySystem, dict[str, Any]]:
    """The stream's memory after ingestion: restored from its snapshot, or built and saved."""
    memory = method.make_memory(sample)
    if snapshot is not None and snapshot.is_file():
        meta = snapshots.restore(memory, snapshot)
        if meta is not None:
            return memory, {**meta, "restored_from_snapshot": True}
    started = time.perf_counter()
    with method.scope(f"ingest:{sample.id}"):
        if method.prefetch_ingest:
            memory.prefetch(sample.turns)
        for turn in tqdm(sample.turns, desc=f"ingest {sample.id}", disable=not progress, leave=False):
            memory.ingest(turn)
        memory.finalize()
    meta = {"ingest_seconds": time.perf_counter() - started}
    if snapshot is not None:
        snapshots.save(memory, snapshot, meta)
    return memory, {**meta, "restored_from_snapshot": False}


def answer_question(sample: Sample, question: Question, memory: MemorySystem,
                    method: MethodRun) -> tuple[dict[str, Any], dict[str, Any]]:
    """One question's prediction row and its timing row."""
    with method.scope(f"question:{sample.id}:{question.id}"):
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
        "retrieval_ranked": retrieval.ranked,
        "scores": score_prediction(answer.text, question.answer, question.category,
                                   retrieval.turn_ids, question.evidence, true_answer),
        "retrieval_debug": retrieval.debug,
        "answer_debug": answer.debug,
    }
    timing = {"sample_id": sample.id, "question_id": question.id, "retrieve_s": t1 - t0, "answer_s": t2 - t1}
    return row, timing


def answer_stream(sample: Sample, memory: MemorySystem, method: MethodRun, done: set[tuple[str, str]],
                  log: PredictionLog, timings: PredictionLog, progress: bool = True,
                  workers: int = 1) -> None:
    """Answer the stream's questions that are not in ``done``, committing rows in question order.

    With ``workers > 1`` and a memory that is read-only at question time, questions run in
    threads, so their calls of each stage reach the (micro-batched) backend together."""
    pending = [q for q in sample.questions if (sample.id, q.id) not in done]
    bar = tqdm(total=len(pending), desc=f"answer {sample.id}", disable=not progress, leave=False)
    if workers > 1 and memory.concurrent_reads and len(pending) > 1:
        with interruptible_pool(workers, f"q-{sample.id}") as pool:
            results = pool.map(lambda q: answer_question(sample, q, memory, method), pending)
            for row, timing in results:               # in question order, each as soon as it is ready
                log.append(row)
                timings.append(timing)
                bar.update()
    else:
        for question in pending:
            row, timing = answer_question(sample, question, memory, method)
            log.append(row)
            timings.append(timing)
            bar.update()
    bar.close()


def merged_ledger(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """A resumed run's ledger: the interrupted sessions' counts plus this session's."""
    merged = summed_reports([current, previous])
    merged["sessions"] = previous.get("sessions", 1) + 1
    return merged


def run_dataset(dataset: Dataset, method: MethodRun, run_dir: Path, progress: bool = True,
                snapshot_root: Path | None = None, config_hash: str = "", streams: int = 1,
                questions: int = 1) -> dict[str, Any]:
    """Answer every stream of ``dataset`` (resuming what ``run_dir`` already holds).

    ``streams`` streams run at once (threads), each answering ``questions`` questions at once."""
    predictions = run_dir / "predictions.jsonl"
    ledger_path = run_dir / "ledger.json"
    previous_ledger = json.loads(ledger_path.read_text()) if ledger_path.is_file() else None
    committed_rows(run_dir / "timings.jsonl")
    done = {(r["sample_id"], r["question_id"]) for r in committed_rows(predictions)}
    stats: dict[str, dict[str, Any]] = {}
    ledger_lock = threading.Lock()
    inner_progress = progress and streams <= 1       # one bar per stream only when they run one by one

    def run_stream(sample: Sample) -> None:
        snapshot = (snapshots.snapshot_path(snapshot_root, config_hash, sample.id)
                    if snapshot_root is not None else None)
        memory, meta = prepare_memory(sample, method, snapshot, inner_progress)
        answer_stream(sample, memory, method, done, log, timings, inner_progress, workers=questions)
        stats[sample.id] = {"sample_id": sample.id, "turns": len(sample.turns), **meta, **memory.stats()}
        with ledger_lock:
            ledger = method.ledger()
            write_json(ledger_path, merged_ledger(previous_ledger, ledger) if previous_ledger else ledger)

    with PredictionLog(predictions) as log, PredictionLog(run_dir / "timings.jsonl") as timings:
        bar = tqdm(total=len(dataset.samples), desc=dataset.name, disable=not progress)
        if streams > 1:
            with interruptible_pool(streams, "stream") as pool:
                for _ in pool.map(run_stream, dataset.samples):
                    bar.update()
        else:
            for sample in dataset.samples:
                run_stream(sample)
                bar.update()
        bar.close()
    rows = in_dataset_order(committed_rows(predictions), dataset)
    write_json_lines(predictions, rows)
    metrics = aggregate((r["category"], r["scores"]) for r in rows)
    write_json(run_dir / "metrics.json", metrics)
    write_json(run_dir / "memory_stats.json", [stats[s.id] for s in dataset.samples if s.id in stats])
    return metrics


def in_dataset_order(rows: list[dict[str, Any]], dataset: Dataset) -> list[dict[str, Any]]:
    """Rows sorted as the dataset lists streams and questions (concurrent streams interleave)."""
    position = {(s.id, q.id): (i, j)
                for i, s in enumerate(dataset.samples) for j, q in enumerate(s.questions)}
    return sorted(rows, key=lambda r: position.get((r["sample_id"], r["question_id"]), (len(position), 0)))


def write_json_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rewrite a JSON-lines file atomically (same bytes as appending the rows in this order)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_status(run_dir: Path, state: str, **details: Any) -> None:
    write_json(run_dir / "status.json", {"state": state, "time": time.time(), **details})

