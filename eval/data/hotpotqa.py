"""HotpotQA: the paper's 200-question subset, or the same layout built from raw distractor records.

``hotpot_200.json`` (from the CLAG repository) is 10 chunks × 20 questions in LoCoMo layout,
one sentence per turn. Its build script is not public; :func:`build_hotpot_chunks` makes the same
layout from dev-distractor records: per question its 10 context paragraphs in their original
order, one ``"Title: {title}\\nContent: {sentence}"`` turn per sentence (HotpotQA's leading space
kept), gold = every sentence of both gold (supporting) paragraphs.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eval.data.contract import Dataset
from eval.data.io import read_json, read_jsonl
from eval.data.locomo_layout import chunk_record, load_layout_file, parse_locomo_layout
from eval.data.sources import file_sha256, resolve
from eval.errors import DataError

PAPER_FILE = "hotpotqa/hotpot_200.json"
RAW_FILE = "hotpotqa/hotpot_dev_distractor_500.jsonl"


def load_hotpotqa(root: Path, source: str = "paper", file: str = PAPER_FILE, raw_file: str = RAW_FILE,
                  chunk_size: int = 20, num_chunks: int = 10, shuffle_seed: int | None = None,
                  download: bool = True) -> Dataset:
    """``data=hotpotqa``'s loader: the paper's file, or chunks built from raw records or the hub."""
    if source == "paper":
        return load_hotpot200(root, file, download)
    if source == "raw":
        return load_hotpot_raw(root, raw_file, chunk_size, num_chunks, shuffle_seed, download)
    if source == "hub":
        return load_hotpot_hub(chunk_size, num_chunks, shuffle_seed)
    raise DataError(f"unknown data.source {source!r} for hotpotqa; valid: paper, raw, hub")


def load_hotpot200(root: Path, file: str = PAPER_FILE, allow_download: bool = True) -> Dataset:
    """The paper's own subset, exactly as it evaluated it."""
    return load_layout_file("hotpotqa", root, file, allow_download)


def load_hotpot_raw(
    root: Path,
    file: str = RAW_FILE,
    chunk_size: int = 20,
    num_chunks: int = 10,
    seed: int | None = None,
    allow_download: bool = True,
) -> Dataset:
    """Chunks built from a dev-distractor JSONL (official layout) under the data root."""
    path = resolve(file, root, allow_download=allow_download)
    records = read_jsonl(path) if path.suffix == ".jsonl" else read_json(path)
    report: Counter = Counter()
    layout = build_hotpot_chunks(records, chunk_size, num_chunks, seed, report)
    samples = parse_locomo_layout(layout, source=str(path), report=report)
    return Dataset("hotpotqa", samples, report, {file: file_sha256(path)})


def load_hotpot_hub(chunk_size: int = 20, num_chunks: int = 10, seed: int | None = None) -> Dataset:
    """Chunks built from the hub's ``hotpot_qa`` distractor validation split (needs a hub)."""
    import datasets

    try:
        split = datasets.load_dataset("hotpot_qa", "distractor", split="validation")
    except Exception as exc:  # the hub raises many types; the user needs one sentence
        raise DataError(f"could not load hotpot_qa from the hub ({exc}); use data.source=raw") from exc
    needed = chunk_size * num_chunks if seed is None else len(split)
    records = [split[i] for i in range(min(needed, len(split)))]
    report: Counter = Counter()
    layout = build_hotpot_chunks(records, chunk_size, num_chunks, seed, report)
    samples = parse_locomo_layout(layout, source="hub:hotpot_qa/distractor", report=report)
    return Dataset("hotpotqa", samples, report, {"hub:hotpot_qa/distractor/validation": ""})


def _official_layout(record: Any, where: str) -> dict[str, Any]:
    """Accept the official record layout or the hub's (column-wise context and facts)."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object")
    context = record.get("context")
    facts = record.get("supporting_facts")
    if isinstance(context, dict) and isinstance(facts, dict):  # hub layout: columns
        try:
            context = list(zip(context["title"], context["sentences"]))
            facts = list(zip(facts["title"], facts["sent_id"]))
        except (KeyError, TypeError) as exc:
            raise DataError(f"{where}: malformed hub-layout context or supporting_facts") from exc
    qid = record.get("_id", record.get("id"))
    for key, value in (("context", context), ("supporting_facts", facts), ("id", qid),
                       ("question", record.get("question")), ("answer", record.get("answer"))):
        if value is None:
            raise DataError(f"{where}: missing key {key!r}")
    if not isinstance(record["question"], str) or not isinstance(record["answer"], str):
        raise DataError(f"{where}: question and answer should be strings")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise DataError(f"{where}: the id should be a string")
    if not isinstance(context, list) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], list)
            and all(isinstance(s, str) for s in p[1]) for p in context):
        raise DataError(f"{where}: context should be a list of [title, [sentences]]")
    if not isinstance(facts, list) or not all(isinstance(f, (list, tuple)) and len(f) == 2 for f in facts):
        raise DataError(f"{where}: supporting_facts should be a list of [title, sentence index]")
    return {"id": str(qid), "question": record["question"], "answer": record["answer"],
            "context": context, "supporting_facts": facts}


def build_hotpot_chunks(
    records: Iterable[Any],
    chunk_size: int = 20,
    num_chunks: int = 10,
    seed: int | None = None,
    report: Counter | None = None,
) -> list[dict[str, Any]]:
    """LoCoMo-layout chunks of ``chunk_size`` questions, in file order (or seeded shuffle)."""
    report = report if report is not None else Counter()
    items = [_official_layout(r, f"record {i}") for i, r in enumerate(records)]
    order = list(range(len(items)))
    if seed is not None:
        random.Random(seed).shuffle(order)
    available = len(items) // chunk_size
    if available < num_chunks:
        raise DataError(
            f"{len(items)} HotpotQA records make only {available} chunks of {chunk_size}; "
            f"{num_chunks} were asked for"
        )
    chunks = []
    for c in range(num_chunks):
        turns: list[dict[str, str]] = []
        qa: list[dict[str, Any]] = []
        for idx in order[c * chunk_size:(c + 1) * chunk_size]:
            item = items[idx]
            gold_titles = {title for title, _ in item["supporting_facts"]}
            gold: list[str] = []
            for title, sentences in item["context"]:
                for sentence in sentences:
                    dia_id = f"{c}:{len(turns)}"
                    turns.append({"speaker": "System", "dia_id": dia_id,
                                  "text": f"Title: {title}\nContent: {sentence}"})
                    if title in gold_titles:
                        gold.append(dia_id)
            if len(item["context"]) != 10:
                report["questions_without_10_paragraphs"] += 1
            qa.append({"question": item["question"], "answer": item["answer"], "category": 4,
                       "question_id": item["id"], "gold_turn_ids": gold})
        chunks.append(chunk_record(c, turns, qa))
    return chunks
