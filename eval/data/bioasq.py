"""BioASQ: 200 factoid/list questions built from Task-B golden files, as the paper prepared them.

Follows CLAG's ``prepare_bioasq_gold_context.py`` (the variant with gold turn ids):
- keep ``factoid`` (→ category 4, the default prompt) and ``list`` (→ category 6, the list prompt);
- the answer is the first synonym of each ``exact_answer`` item joined with ``" ; "`` (items that
  are not lists are skipped; questions left with no answer or no snippet are dropped);
- snippets are deduplicated within a question (case- and whitespace-insensitive);
- records are shuffled with ``random.seed(seed)`` and chunk *c* takes shuffled indices
  ``[c·size, (c+1)·size)``;
- each snippet is split into sentences after ``.``/``!``/``?`` + whitespace (whitespace collapsed
  first); each sentence is a ``"System"`` turn ``"{chunk}:{n}"``; a question's gold turns are all
  sentences of its own snippets.
From ``Task10BGoldenEnriched/10B*_golden.json`` this gives 200 questions and chunk turn counts
[300, 326, 362, 134, 142, 415, 265, 238, 282, 260].
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from eval.data.contract import Dataset
from eval.data.io import read_json
from eval.data.locomo_layout import chunk_record, parse_locomo_layout
from eval.data.sources import is_verified, verify
from eval.errors import DataError

DEFAULT_GLOB = "bioasq/taskb_golden/Task10BGoldenEnriched/10B*_golden.json"
CATEGORY_BY_TYPE = {"factoid": 4, "list": 6}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    collapsed = re.sub(r"\s+", " ", text).strip()
    return [s.strip() for s in _SENTENCE_END.split(collapsed) if s.strip()] if collapsed else []


def _dedup_key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def flatten_answer(exact_answer: Any) -> str:
    """First synonym of each answer item, joined with ``" ; "``; ``""`` when nothing usable."""
    if not isinstance(exact_answer, list):
        return ""
    firsts = [
        item[0].strip()
        for item in exact_answer
        if isinstance(item, list) and item and isinstance(item[0], str) and item[0].strip()
    ]
    return " ; ".join(firsts)


def golden_records(questions: list[Any], report: Counter, dedup_snippets: bool = True) -> list[dict]:
    """The factoid/list questions that have an answer and at least one snippet."""
    records = []
    for q in questions:
        if not isinstance(q, dict) or q.get("type") not in CATEGORY_BY_TYPE:
            continue
        if not isinstance(q.get("id"), (str, int)) or not isinstance(q.get("body"), str) or not q["body"]:
            report["bioasq_dropped_no_id_or_body"] += 1
            continue
        seen: set[str] = set()
        snippets = []
        raw_snippets = q.get("snippets")
        for snip in raw_snippets if isinstance(raw_snippets, list) else []:
            text = snip.get("text") if isinstance(snip, dict) else None
            if not isinstance(text, str) or not text.strip():
                continue
            key = _dedup_key(text)
            if dedup_snippets and key in seen:
                report["bioasq_snippets_deduplicated"] += 1
                continue
            seen.add(key)
            snippets.append(text.strip())
        if not snippets:
            report["bioasq_dropped_no_snippet"] += 1
            continue
        answer = flatten_answer(q.get("exact_answer"))
        if not answer:
            report["bioasq_dropped_no_answer"] += 1
            continue
        records.append({"question_id": str(q["id"]), "question": q["body"].strip(),
                        "answer": answer, "snippets": snippets,
                        "category": CATEGORY_BY_TYPE[q["type"]]})
    return records


def build_bioasq_chunks(
    records: list[dict], chunk_size: int = 20, num_chunks: int = 10, seed: int = 42
) -> list[dict[str, Any]]:
    """LoCoMo-layout chunks from :func:`golden_records` output."""
    available = len(records) // chunk_size
    if available < num_chunks:
        raise DataError(
            f"the golden files give {len(records)} factoid/list questions, only {available} "
            f"chunks of {chunk_size}; {num_chunks} were asked for"
        )
    order = list(range(len(records)))
    # the reference seeds the global generator; an own Random(seed) gives the same sequence
    random.Random(seed).shuffle(order)
    chunks = []
    for c in range(num_chunks):
        turns: list[dict[str, str]] = []
        qa = []
        for idx in order[c * chunk_size:(c + 1) * chunk_size]:
            rec = records[idx]
            gold = []
            for snippet in rec["snippets"]:
                for sentence in split_sentences(snippet):
                    dia_id = f"{c}:{len(turns)}"
                    turns.append({"speaker": "System", "dia_id": dia_id, "text": sentence})
                    gold.append(dia_id)
            qa.append({"question_id": rec["question_id"], "question": rec["question"],
                       "answer": rec["answer"], "category": rec["category"],
                       "gold_turn_ids": gold})
        chunks.append(chunk_record(c, turns, qa))
    return chunks


def load_bioasq(
    root: Path,
    golden_glob: str = DEFAULT_GLOB,
    chunk_size: int = 20,
    num_chunks: int = 10,
    seed: int = 42,
    dedup_snippets: bool = True,
) -> Dataset:
    """Build the chunks from every golden file matching ``golden_glob`` under the data root."""
    paths = sorted(root.glob(golden_glob))
    if not paths:
        raise DataError(
            f"no BioASQ golden files match {golden_glob!r} under {root}: download the Task B "
            "golden batches from bioasq.org (registration required) and place them there, or "
            "point data.golden_glob at your files"
        )
    report: Counter = Counter()
    files: dict[str, str] = {}
    questions: list[Any] = []
    for path in paths:
        relative = path.relative_to(root).as_posix()
        files[relative] = verify(path, relative)
        if not is_verified(relative):
            report["bioasq_files_without_published_checksum"] += 1
        data = read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
            raise DataError(f"{path}: not a BioASQ golden file (no top-level 'questions' list)")
        questions.extend(data["questions"])
    records = golden_records(questions, report, dedup_snippets=dedup_snippets)
    layout = build_bioasq_chunks(records, chunk_size, num_chunks, seed)
    samples = parse_locomo_layout(layout, source=golden_glob, report=report)
    return Dataset("bioasq", samples, report, files)
