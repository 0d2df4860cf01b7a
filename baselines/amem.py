"""A-mem (Xu et al., NeurIPS 2025) as the paper-reproduction repository runs it.

Follows ``WujiangXu/A-mem`` ``memory_layer.py`` + ``test_advanced.py`` (the code CLAG forks,
commit 0c8039f; baselines.md §2), not the ChromaDB library: every turn is analysed and evolved
against its 5 global nearest neighbours; every 100 evolutions the global index is re-embedded
from all notes; questions are answered from a keyword query, global top-10 plus linked notes.

Reference details kept, each a named option in ``configs/method/amem.yaml``:
- ``keyword_separator: cosmos`` — its keyword prompt's typo for "commas";
- ``link_limit: 11`` — its link loop admits k + 1 linked notes per retrieved note;
- ``context_separator: ""`` — its context lines have no separator between fields;
- ``global_doc_format: repo_2025_07`` — the document indexed at insertion since July 2025
  (``paper_2025_05`` indexes context + keywords only, as the code of the paper's time did).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from clag.notes import NoteMemory, NoteOptions


@dataclass(frozen=True)
class AMemOptions(NoteOptions):
    """The note machinery's options with the A-mem reference's values as defaults."""

    keyword_separator: str = "cosmos"
    link_limit: int = 11
    context_separator: str = ""


class AMemMemory(NoteMemory):
    """A-mem is the shared note machinery with its global-only neighbour and search steps."""

    options_class: ClassVar[type[NoteOptions]] = AMemOptions
