"""Retrieval latency: faiss flat index vs numpy brute force, at 1k, 10k and 100k notes.

    python scripts/bench_retrieval.py                 # 384-d (MiniLM), k = 10, 200 queries
    python scripts/bench_retrieval.py --sizes 1000 10000 --queries 500

One query at a time, as a memory system searches. Vectors are random unit vectors (latency does
not depend on their values). faiss is the index memory systems use (``clag.index.VectorIndex``,
inner product on unit vectors); numpy is ``argpartition`` over ``matrix @ query``. Also checks
both return the same neighbours. Prints a table and writes results/bench/retrieval.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from clag.index import VectorIndex  # noqa: E402
from scripts.bench_common import write_result  # noqa: E402


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def numpy_search(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 4),
            "p99_ms": round(float(np.percentile(ms, 99)), 4), "mean_ms": round(float(ms.mean()), 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import faiss

    rng = np.random.default_rng(0)
    rows = []
    for n in args.sizes:
        matrix = unit(rng, n, args.dim)
        queries = unit(rng, args.queries, args.dim)
        index = VectorIndex(args.dim, "cosine")
        started = time.perf_counter()
        index.add(range(n), matrix)
        build_s = time.perf_counter() - started
        timings: dict[str, list[float]] = {"faiss": [], "numpy": []}
        agree = 0
        for q in queries:
            t0 = time.perf_counter()
            ids, _ = index.search(q, args.k)
            t1 = time.perf_counter()
            brute = numpy_search(matrix, q, args.k)
            t2 = time.perf_counter()
            timings["faiss"].append(t1 - t0)
            timings["numpy"].append(t2 - t1)
            agree += set(ids) == set(brute.tolist())
        for name, samples in timings.items():
            rows.append({"notes": n, "method": name, **percentiles(samples),
                         "build_s": round(build_s, 4) if name == "faiss" else None})
        rows[-1]["same_neighbours"] = rows[-2]["same_neighbours"] = f"{agree}/{len(queries)}"
    settings = {"dim": args.dim, "k": args.k, "queries": args.queries, "faiss": faiss.__version__,
                "faiss_threads": faiss.omp_get_max_threads()}
    path = write_result("retrieval", {**settings, "results": rows}, args.out)
    print(f"{'notes':>8} {'method':>6} {'p50 ms':>9} {'p99 ms':>9} {'mean ms':>9}  same top-{args.k}")
    for r in rows:
        print(f"{r['notes']:>8} {r['method']:>6} {r['p50_ms']:>9.3f} {r['p99_ms']:>9.3f} {r['mean_ms']:>9.3f}"
              f"  {r['same_neighbours']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
