"""Exact k nearest neighbours of every point among the others, in chunks of queries.

Candidates come from faiss's exact flat index (``IndexFlatL2``, float32 BLAS with its own
blocking; scikit-learn's brute-force ``NearestNeighbors`` when faiss is not installed), then
are re-ranked with float64 distances: each query asks for ``k + 1 + RERANK`` candidates, the
point itself is dropped (wherever it lands among exact duplicates), the rest are sorted by
their float64 distance (ties by index) and the first ``k`` kept. So the distances returned are
exact, and the neighbours are the exact ones up to float32 ties beyond the re-rank margin.

Memory: the points once as float32 (n × r), the result (n × k), and one chunk of queries'
candidates at a time — linear in n (docs/audit.md has the measured figures). Time: n² distance
evaluations and as many candidates through the k-selection, which dominates in few dimensions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # which CPU build it loaded
try:  # the fast exact search; optional so that the audit still runs without it
    import faiss
except ImportError:  # pragma: no cover - exercised where faiss is absent
    faiss = None

RERANK = 8  # extra float32 candidates re-ranked in float64
QUERY_CHUNK = 4096


def backend() -> str:
    return "faiss" if faiss is not None else "scikit-learn"


def _candidates_faiss(points32: np.ndarray, threads: int) -> Callable:
    faiss.omp_set_num_threads(max(1, int(threads)))
    index = faiss.IndexFlatL2(points32.shape[1])
    index.add(points32)

    def search(queries32: np.ndarray, m: int) -> np.ndarray:
        _, found = index.search(queries32, m)
        return found

    return search


def _candidates_sklearn(points32: np.ndarray, threads: int) -> Callable:
    from sklearn.neighbors import NearestNeighbors  # only where faiss is missing

    index = NearestNeighbors(algorithm="brute", n_jobs=max(1, int(threads))).fit(points32)

    def search(queries32: np.ndarray, m: int) -> np.ndarray:
        return index.kneighbors(queries32, n_neighbors=m, return_distance=False)

    return search


def knn(
    points: np.ndarray,
    k: int,
    *,
    threads: int = 1,
    chunk: int = QUERY_CHUNK,
    progress: Callable[[float], None] | None = None,
    use_faiss: bool | None = None,
    queries: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, distances)``, both (n, k): each point's k nearest other points (Euclidean, in
    the given coordinates) and their float64 distances, nearest first. ``progress(share)`` is
    called after each chunk of queries. ``queries``: only the first so many points' neighbours
    (among all points), e.g. to measure a part of a large search."""
    x = np.ascontiguousarray(points, dtype=np.float64)
    n = x.shape[0]
    if x.ndim != 2 or n < 2:
        raise ValueError("need at least two points as an (n, d) array")
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be between 1 and n - 1 = {n - 1}, got {k}")
    if x.shape[1] == 0:  # a metric that ignores everything: every distance is 0
        x = np.zeros((n, 1))
    points32 = np.ascontiguousarray(x, dtype=np.float32)
    fast = faiss is not None if use_faiss is None else use_faiss
    search = (_candidates_faiss if fast else _candidates_sklearn)(points32, threads)
    m = min(n, k + 1 + RERANK)
    total = n if queries is None else min(n, int(queries))
    indices = np.empty((total, k), dtype=np.int64)
    distances = np.empty((total, k), dtype=np.float64)
    for start in range(0, total, chunk):
        stop = min(start + chunk, total)
        found = np.asarray(search(points32[start:stop], m), dtype=np.int64)
        own = np.arange(start, stop)[:, None]
        valid = (found >= 0) & (found != own)
        safe = np.where(valid, found, 0)
        diff = x[safe] - x[start:stop, None, :]
        exact = np.sqrt(np.einsum("qmd,qmd->qm", diff, diff))
        exact = np.where(valid, exact, np.inf)
        order = np.lexsort((safe, exact), axis=-1)[:, :k]
        indices[start:stop] = np.take_along_axis(safe, order, axis=1)
        distances[start:stop] = np.take_along_axis(exact, order, axis=1)
        if progress is not None:
            progress(stop / total)
    if not np.all(np.isfinite(distances)):  # pragma: no cover - a search that found too few
        raise RuntimeError("the neighbour search returned fewer than k neighbours")
    return indices, distances
