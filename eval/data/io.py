"""Reading dataset files with one clear error for each way they can be broken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.errors import DataError


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start}): is it the right file?") from exc
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "the file may be truncated: delete it and fetch it again"
        ) from exc


def read_jsonl(path: Path) -> list[Any]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start}): is it the right file?") from exc
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}") from exc
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} line {number} is not valid JSON ({exc.msg})") from exc
    return records
