"""LoCoMo (``locomo10.json``): 10 conversations, 5,882 turns, 1,986 questions in categories 1–5."""

from __future__ import annotations

from pathlib import Path

from eval.data.contract import Dataset
from eval.data.locomo_layout import load_layout_file

DEFAULT_FILE = "locomo/locomo10.json"


def load_locomo(root: Path, file: str = DEFAULT_FILE, download: bool = True,
                caption_rule: str = "reference") -> Dataset:
    """The ten conversations, image turns captioned (``caption_rule``), evidence ids cleaned
    (see the report); ``download``: fetch the public file when it is missing."""
    return load_layout_file("locomo", root, file, download, caption_rule)
