"""LoCoMo (``locomo10.json``): 10 conversations, 5,882 turns, 1,986 questions in categories 1–5."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eval.data.contract import Dataset
from eval.data.io import read_json
from eval.data.locomo_layout import parse_locomo_layout
from eval.data.sources import file_sha256, resolve

DEFAULT_FILE = "locomo/locomo10.json"


def load_locomo(root: Path, file: str = DEFAULT_FILE, allow_download: bool = True) -> Dataset:
    """The ten conversations, image turns captioned, evidence ids cleaned (see the report)."""
    path = resolve(file, root, allow_download=allow_download)
    report: Counter = Counter()
    samples = parse_locomo_layout(read_json(path), source=str(path), report=report)
    return Dataset("locomo", samples, report, {file: file_sha256(path)})
