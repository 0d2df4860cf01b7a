"""clag: the CLAG memory system and the memory primitives the baselines share.

This package knows nothing of datasets or metrics: it sees turns, answers questions, and reports
ranked turn ids. The harness in :mod:`eval` scores it.
"""

__version__ = "0.1.0"
