"""A vector index on faiss: cosine or squared-L2, add/remove by id, search inside a subset.

CLAG searches inside one cluster: ``search(..., subset=member_ids)`` restricts an exact flat
search to those ids with a faiss ID selector, so a cluster needs no index of its own. With the
``gpu`` extra and a visible GPU, ``use_gpu=True`` moves the flat index to the device.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # its AVX probing is not news

try:
    import faiss  # noqa: E402
except ImportError as _missing:     # faiss comes from an extra: exactly one of faiss-cpu / faiss-gpu
    from clag.errors import UserFacingError

    raise UserFacingError("faiss is not installed: pip install -e '.[cpu]' "
                          "(or '.[gpu]' on a GPU machine)") from _missing

METRICS = ("cosine", "l2")


class VectorIndex:
    def __init__(self, dim: int, metric: str = "cosine", use_gpu: bool = False) -> None:
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, not {metric!r}")
        self.dim = dim
        self.metric = metric
        flat = faiss.IndexFlatIP(dim) if metric == "cosine" else faiss.IndexFlatL2(dim)
        self._index = faiss.IndexIDMap2(flat)
        self._ids: set[int] = set()
        if use_gpu and hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
            self._gpu_resources = faiss.StandardGpuResources()
            self._index = faiss.index_cpu_to_gpu(self._gpu_resources, 0, self._index)

    def __len__(self) -> int:
        return len(self._ids)

    def __getstate__(self) -> dict:
        """Picklable (for memory snapshots): the faiss index travels as its serialized bytes."""
        index = self._index
        if hasattr(faiss, "index_gpu_to_cpu") and hasattr(self, "_gpu_resources"):
            index = faiss.index_gpu_to_cpu(index)
        return {"dim": self.dim, "metric": self.metric, "ids": self._ids,
                "index": faiss.serialize_index(index)}

    def __setstate__(self, state: dict) -> None:
        self.dim, self.metric, self._ids = state["dim"], state["metric"], state["ids"]
        self._index = faiss.deserialize_index(state["index"])

    def _prepare(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of dimension {self.dim}, got {vectors.shape[1]}")
        if self.metric == "cosine":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1, norms)
        return vectors

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        ids = list(ids)
        clash = self._ids.intersection(ids)
        if clash or len(set(ids)) != len(ids):
            raise ValueError(f"ids already in the index or repeated: {sorted(clash)[:5]}")
        self._index.add_with_ids(self._prepare(vectors), np.asarray(ids, dtype=np.int64))
        self._ids.update(ids)

    def remove(self, ids: Sequence[int]) -> None:
        self._index.remove_ids(np.asarray(list(ids), dtype=np.int64))
        self._ids.difference_update(ids)

    def replace(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Re-embed existing entries (A-mem's consolidation)."""
        self.remove(ids)
        self.add(ids, vectors)

    def vector(self, item: int) -> np.ndarray:
        """The stored (for cosine: normalised) vector of one id."""
        return self._index.reconstruct(int(item))

    def search(self, query: np.ndarray, k: int, subset: Sequence[int] | None = None
               ) -> tuple[list[int], list[float]]:
        """Ids and scores, best first. Cosine: higher is better; l2: squared distance, lower is better."""
        pool = len(self._ids) if subset is None else len(set(subset) & self._ids)
        k = min(k, pool)
        if k <= 0:
            return [], []
        params = None
        if subset is not None:
            allowed = np.asarray(list(subset), dtype=np.int64)
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(allowed))
        scores, ids = self._index.search(self._prepare(query), k, params=params)
        keep = ids[0] >= 0
        return ids[0][keep].tolist(), scores[0][keep].tolist()
