"""The real MiniLM embedder and the faiss index against numpy brute force."""

import numpy as np
import pytest

from clag.embed import Embedder
from clag.index import VectorIndex


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def test_minilm_embeds_offline_with_unit_vectors(embedder):
    v = embedder.encode(["a cat", "a feline", "stock markets"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    assert np.array_equal(embedder.encode(["a cat"])[0], v[0])    # memoised, identical


@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_search_matches_brute_force_and_respects_subsets(metric):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(300, 16)).astype(np.float32)
    ids = list(range(1000, 1300))
    index = VectorIndex(16, metric)
    index.add(ids, data)
    query = rng.normal(size=16).astype(np.float32)
    if metric == "cosine":
        normed = data / np.linalg.norm(data, axis=1, keepdims=True)
        scores = normed @ (query / np.linalg.norm(query))
        order = np.argsort(-scores)
    else:
        scores = ((data - query) ** 2).sum(axis=1)
        order = np.argsort(scores)
    found, found_scores = index.search(query, 10)
    assert found == [ids[i] for i in order[:10]]
    assert np.allclose(found_scores, scores[order[:10]], atol=1e-4)
    subset = ids[::7]
    inside, _ = index.search(query, 5, subset=subset)
    expected = [ids[i] for i in order if ids[i] in set(subset)][:5]
    assert inside == expected
    index.remove(found[:3])
    assert index.search(query, 1)[0] == [ids[order[3]]] and len(index) == 297


def test_index_refuses_duplicates_and_wrong_dimensions():
    index = VectorIndex(4)
    index.add([1], np.ones((1, 4)))
    with pytest.raises(ValueError):
        index.add([1], np.ones((1, 4)))
    with pytest.raises(ValueError):
        index.add([2], np.ones((1, 5)))
    assert index.search(np.ones(4), 5, subset=[]) == ([], [])
