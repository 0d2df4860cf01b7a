"""Parse the LoCoMo JSON layout into the data contract.

The reference evaluation scripts express every dataset (LoCoMo, the HotpotQA subset, the
BioASQ chunks) in LoCoMo's layout and read it with one loader; so do we. Anything the parser
must fix (malformed evidence ids, int answers) is counted in the dataset report.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clag.types import Question, Sample, Turn
from eval.errors import DataError

if TYPE_CHECKING:
    from eval.data.contract import Dataset

_SESSION_KEY = re.compile(r"session_(\d+)")
# LoCoMo evidence ids look like "D12:3"; a few are written "D:11:26" or "D30:05".
_LOCOMO_ID = re.compile(r"D:?(\d+):0*(\d+)")

#: the true label of a LoCoMo category-5 (adversarial) question whose data has none
NOT_MENTIONED = "Not mentioned in the conversation"
ADVERSARIAL = 5


#: the date the paper's chunk builders give every HotpotQA/BioASQ stream
CHUNK_STREAM_DATE = "2020-01-01 00:00:00"


def chunk_record(index: int, turns: list[dict[str, str]], qa: list[dict[str, Any]]) -> dict[str, Any]:
    """One HotpotQA/BioASQ chunk in LoCoMo layout: a single "System" session."""
    return {"sample_id": index,
            "conversation": {"speaker_a": "System", "speaker_b": "User", "session_0": turns,
                             "session_0_date_time": CHUNK_STREAM_DATE},
            "qa": qa}


def load_layout_file(name: str, root: Path, file: str, allow_download: bool = True,
                     caption_rule: str = "reference") -> Dataset:
    """A dataset stored in LoCoMo layout under the data root (LoCoMo, ``hotpot_200.json``)."""
    from eval.data.contract import Dataset
    from eval.data.io import read_json
    from eval.data.sources import file_sha256, resolve

    path = resolve(file, root, allow_download=allow_download)
    report: Counter = Counter()
    samples = parse_locomo_layout(read_json(path), source=str(path), report=report, caption_rule=caption_rule)
    return Dataset(name, samples, report, {file: file_sha256(path)})


#: how an image turn's caption enters its text. ``reference``: only when the turn has both
#: ``img_url`` and ``blip_caption`` (the paper's loader; 910 LoCoMo turns); ``caption``: whenever
#: ``blip_caption`` exists (this project's earlier rule; 316 more turns, which changed the first
#: K-Means split of a 250-turn run and every retrieval after it)
CAPTION_RULES = ("reference", "caption")


def parse_locomo_layout(records: Any, source: str, report: Counter,
                        caption_rule: str = "reference") -> list[Sample]:
    """Samples from a list of LoCoMo-layout records (``sample_id``, ``conversation``, ``qa``)."""
    if caption_rule not in CAPTION_RULES:
        raise DataError(f"unknown data.caption_rule {caption_rule!r}; valid: {', '.join(CAPTION_RULES)}")
    if not isinstance(records, list):
        raise DataError(f"{source}: expected a JSON list of samples, got {type(records).__name__}")
    if not records:
        raise DataError(f"{source}: the file holds no samples")
    return [_parse_sample(rec, i, source, report, caption_rule) for i, rec in enumerate(records)]


def _require(mapping: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(mapping, dict):
        raise DataError(f"{where}: expected an object, got {type(mapping).__name__}")
    if key not in mapping:
        raise DataError(f"{where}: missing key {key!r}")
    value = mapping[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DataError(f"{where}: {key!r} should be {names}, got {type(value).__name__}")
    return value


def _parse_sample(rec: Any, index: int, source: str, report: Counter, caption_rule: str) -> Sample:
    where = f"{source}: sample {index}"
    sample_id = str(_require(rec, "sample_id", where, (str, int)))
    where = f"{source}: sample {sample_id}"
    conversation = _require(rec, "conversation", where, dict)
    turns = _parse_turns(conversation, where, report, caption_rule)
    if not turns:
        raise DataError(f"{where}: the conversation has no turns")
    known_ids = {t.id for t in turns}
    if len(known_ids) != len(turns):
        raise DataError(f"{where}: turn ids (dia_id) are not unique")
    qa = _require(rec, "qa", where, list)
    questions = [
        _parse_question(item, sample_id, j, known_ids, f"{where} qa[{j}]", report)
        for j, item in enumerate(qa)
    ]
    return Sample(id=sample_id, turns=tuple(turns), questions=tuple(questions))


def _parse_turns(conversation: dict, where: str, report: Counter, caption_rule: str) -> list[Turn]:
    sessions = sorted(
        (int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.fullmatch(key))
    )
    turns: list[Turn] = []
    for _, key in sessions:
        items = conversation[key]
        if not isinstance(items, list):
            raise DataError(f"{where}: {key!r} should be a list of turns")
        timestamp = conversation.get(f"{key}_date_time", "")
        if not isinstance(timestamp, str):
            raise DataError(f"{where}: {key}_date_time should be a string")
        for k, item in enumerate(items):
            turn_where = f"{where} {key}[{k}]"
            speaker = _require(item, "speaker", turn_where, str)
            dia_id = _require(item, "dia_id", turn_where, str)
            text = _require(item, "text", turn_where, str)
            if "blip_caption" in item:
                has_image = "img_url" in item
                if not has_image:
                    report["captions_without_image_url"] += 1
                if has_image or caption_rule == "caption":
                    # as the paper's loader builds image turns: caption first, the text after it
                    caption = f"[Image: {item['blip_caption']}]"
                    text = f"{caption} {text}" if text else caption
                    report["image_turns_captioned"] += 1
            turns.append(Turn(id=dia_id, speaker=speaker, text=text, timestamp=timestamp,
                              session=key))
    return turns


def _parse_question(
    item: Any, sample_id: str, index: int, known_ids: set[str], where: str, report: Counter
) -> Question:
    text = _require(item, "question", where, str)
    category = _require(item, "category", where, int)
    if isinstance(category, bool):
        raise DataError(f"{where}: 'category' should be int, got bool")
    answer, extra = _reference_answer(item, category, where, report)
    raw_evidence = item.get("gold_turn_ids", item.get("evidence", []))
    if not isinstance(raw_evidence, list):
        raise DataError(f"{where}: evidence should be a list of turn ids")
    evidence = clean_evidence(raw_evidence, known_ids, report)
    if not evidence:
        report["questions_without_evidence"] += 1
    qid = item.get("question_id")
    return Question(
        id=str(qid) if qid is not None else f"{sample_id}:q{index}",
        text=text,
        answer=answer,
        category=category,
        evidence=tuple(evidence),
        extra=extra,
    )


def _reference_answer(
    item: dict, category: int, where: str, report: Counter
) -> tuple[str, dict[str, Any]]:
    """The answer the paper scores against, plus what a corrected score needs.

    Category 5 follows the A-mem/CLAG convention: the reference is ``adversarial_answer`` (the
    trap), so answering "not mentioned" scores as wrong. ``extra["true_answer"]`` keeps the
    correct label for the corrected score.
    """
    extra: dict[str, Any] = {}
    if category == ADVERSARIAL and "adversarial_answer" in item:
        raw = item["adversarial_answer"]
        extra["adversarial_answer"] = raw
        extra["true_answer"] = str(item["answer"]) if item.get("answer") is not None else NOT_MENTIONED
    elif "answer" in item:
        raw = item["answer"]
    else:
        raise DataError(f"{where}: missing key 'answer'")
    if raw is None:
        raise DataError(f"{where}: the answer is null")
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise DataError(f"{where}: the answer should be a string, got {type(raw).__name__}")
    if not isinstance(raw, str):
        report["answers_cast_to_str"] += 1
    answer = str(raw)
    if not answer.strip():
        report["questions_with_empty_answer"] += 1
    return answer, extra


def clean_evidence(raw: list[Any], known_ids: set[str], report: Counter) -> list[str]:
    """Normalise evidence ids, keeping order and dropping duplicates; every fix is counted.

    Handles the malformed LoCoMo ids: several ids in one string (``"D8:6; D9:17"``), a stray
    colon (``"D:11:26"``), zero padding (``"D30:05"``), bare ``"D"``, and ids of turns that do
    not exist.
    """
    out: list[str] = []
    for entry in raw:
        if not isinstance(entry, str):
            report["evidence_dropped_malformed"] += 1
            continue
        parts = [p for p in re.split(r"[;,\s]+", entry) if p]
        if len(parts) > 1:
            report["evidence_split"] += 1
        for part in parts:
            ev = part
            if ev not in known_ids and (m := _LOCOMO_ID.fullmatch(ev)):
                ev = f"D{int(m.group(1))}:{int(m.group(2))}"
                if ev != part:
                    report["evidence_reformatted"] += 1
            if ev in known_ids:
                if ev not in out:
                    out.append(ev)
            elif _LOCOMO_ID.fullmatch(ev) or re.fullmatch(r"\d+:\d+", ev):
                report["evidence_dropped_missing_turn"] += 1
            else:
                report["evidence_dropped_malformed"] += 1
    return out
