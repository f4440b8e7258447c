"""Exact k nearest neighbours of every point among the others: each point's first ``k`` other
points in the order (float64 distance, index).

The search runs over the **distinct** points (exact duplicates searched once; Adult has 25,957
distinct records among 30,162) and then hands each item its distinct point's neighbours, with
its own duplicates at distance 0 and never itself:

1. **candidates** from faiss's exact flat index (``IndexFlatL2``, float32 BLAS; scikit-learn's
   brute-force ``NearestNeighbors`` where faiss is missing): each distinct query asks for its
   ``k + 1 + RERANK`` nearest distinct points in float32 (coordinates centred first);
2. **re-rank**: the candidates' items (each distinct point's members, lowest indices first) get
   their float64 distances (:func:`pair_distances`) and are ordered by (distance, index); the
   first ``k + 1`` items are the query's list (``k`` for each member once it leaves itself out);
3. **certificate**: the list is exact when every point left out is provably farther than its
   last entry: the float32 distance of the farthest candidate, less a bound on float32's error
   (:func:`_float32_error`, four times the textbook bound), must exceed the list's last float64
   distance. Queries that fail (ties or near-ties at the list's end, e.g. many points at the
   same one-hot distance) are searched again in float64 against every distinct point (BLAS for
   the bound, :func:`pair_distances` for the order), so the result never depends on float32.

Memory: the distinct points once in float64 and float32, the item grouping (n), the result
(n × k), and one chunk of queries' candidates at a time — linear in n (docs/audit.md has the
measured figures). Time: n² float32 distance evaluations and their k-selection, which dominates
in few dimensions; faiss releases the GIL, so two searches run side by side in two threads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # which CPU build it loaded
try:  # the fast exact search; optional so that the audit still runs without it
    import faiss
except ImportError:  # pragma: no cover - exercised where faiss is absent
    faiss = None

RERANK = 8  # extra distinct candidates per query beyond the k + 1 items needed
QUERY_CHUNK = 4096
HASH_CHUNK = 65_536  # rows hashed or compared at once
FALLBACK_CELLS = 4_000_000  # distances held at once by the float64 re-search (32 MB)
U32 = 2.0**-24  # float32's unit roundoff
U64 = 2.0**-53


def backend() -> str:
    return "faiss" if faiss is not None else "scikit-learn"


def pair_distances(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``‖x[a] − x[b]‖`` for each pair, in float64: the one formula every distance this module
    returns (and the tests' brute force) is computed with, so equal pairs give equal bits."""
    diff = x[b] - x[a]
    return np.sqrt(np.einsum("pd,pd->p", diff, diff))


def _candidates_faiss(points32: np.ndarray, threads: int) -> Callable:
    faiss.omp_set_num_threads(max(1, int(threads)))  # this thread's OpenMP setting
    index = faiss.IndexFlatL2(points32.shape[1])
    index.add(points32)

    def search(queries32: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        squared, found = index.search(queries32, m)
        return squared, found

    return search


def _candidates_sklearn(points32: np.ndarray, threads: int) -> Callable:
    from sklearn.neighbors import NearestNeighbors  # only where faiss is missing

    index = NearestNeighbors(algorithm="brute", n_jobs=max(1, int(threads))).fit(points32)

    def search(queries32: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        dist, found = index.kneighbors(queries32, n_neighbors=m, return_distance=True)
        return np.square(dist, dtype=np.float64), found

    return search


def row_multipliers(d: int) -> np.ndarray:
    """The odd 64-bit multipliers of a row's hash (fixed: the grouping is deterministic)."""
    return np.random.default_rng(0).integers(1, 2**63, size=d, dtype=np.uint64) | np.uint64(1)


@dataclass(frozen=True)
class _Distinct:
    """The distinct rows of the points and who holds each: ``members[starts[u]:starts[u + 1]]``
    are the indices of the points equal to ``rows[u]``, ascending."""

    rows: np.ndarray  # (u, d) float64
    inverse: np.ndarray  # (n,) each point's distinct row
    members: np.ndarray  # (n,)
    starts: np.ndarray  # (u + 1,)

    @classmethod
    def of(cls, x: np.ndarray) -> _Distinct:
        """Rows grouped by their bits, in the order of their first appearance (so that points
        all distinct keep ``x`` itself, no copy): a hash of each row's 64-bit words (exact
        integer arithmetic), each group then checked word for word; on a collision, a sort of
        the rows' bytes decides."""
        n, d = x.shape
        words = x.view(np.uint64)
        multipliers = row_multipliers(d)
        hashed = np.empty(n, dtype=np.uint64)
        for start in range(0, n, HASH_CHUNK):
            hashed[start : start + HASH_CHUNK] = (
                words[start : start + HASH_CHUNK] * multipliers
            ).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(hashed, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        collided = any(
            not np.array_equal(
                words[start : start + HASH_CHUNK], words[first[inverse[start : start + HASH_CHUNK]]]
            )
            for start in range(0, n, HASH_CHUNK)
        )
        if collided:  # two different rows with one hash
            raw = x.view(np.dtype((np.void, 8 * d))).ravel()
            _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
            inverse = inverse.ravel()
        order = np.argsort(first)  # by first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, inverse = first[order], rank[inverse].astype(np.int64)
        members = np.argsort(inverse, kind="stable").astype(np.int64)
        counts = np.bincount(inverse, minlength=first.size)
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        rows = x if first.size == n else x[first]
        return cls(rows, inverse, members, starts)


def _lists(
    dist: _Distinct, queries: np.ndarray, rows: np.ndarray, cols: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each query's first ``width`` items in (distance, index) order among the members of its
    candidate distinct points: ``rows``/``cols`` are flat (position in ``queries``, distinct
    point) pairs. Returns (q, width) items and distances, padded with -1 / inf."""
    q = queries.size
    d = pair_distances(dist.rows, queries[rows], cols)
    take = np.minimum(dist.starts[cols + 1] - dist.starts[cols], width)  # more never count
    first = np.repeat(np.cumsum(take) - take, take)
    offset = np.arange(first.size) - first
    pair = np.repeat(np.arange(cols.size), take)
    item = dist.members[dist.starts[cols][pair] + offset]
    row, d = rows[pair], d[pair]
    order = np.lexsort((item, d, row))
    row, d, item = row[order], d[order], item[order]
    begin = np.searchsorted(row, np.arange(q))
    end = np.searchsorted(row, np.arange(q), side="right")
    at = begin[:, None] + np.arange(width)
    ok = at < end[:, None]
    at = np.where(ok, at, 0)
    return np.where(ok, item[at], -1), np.where(ok, d[at], np.inf)


def _float32_error(norms: np.ndarray, far: float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds, four times the textbook ones, on a float32 squared distance's error between a
    query of norm ``norms`` and any point of norm at most ``far`` (``‖q‖² + ‖y‖² − 2qᵀy`` with
    length-d sums: γ_{d+2}(‖q‖ + ‖y‖)²), and on the distance's error from rounding the
    coordinates to float32 (u(‖q‖ + ‖y‖))."""
    gamma = (d + 2) * U32 / (1 - (d + 2) * U32)
    return 4 * gamma * (norms + far) ** 2, 4 * U32 * (norms + far)


def _exact_again(
    dist: _Distinct, mean: np.ndarray, queries: np.ndarray, limit: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """The lists of ``queries`` from every distinct point within ``limit`` (an upper bound on
    each list's last distance), found with float64 BLAS and a bound on its error."""
    centred = dist.rows - mean
    norms = np.einsum("ud,ud->u", centred, centred)
    far = float(np.sqrt(norms.max()))
    gamma = (centred.shape[1] + 2) * U64 / (1 - (centred.shape[1] + 2) * U64)
    items = np.empty((queries.size, width), dtype=np.int64)
    dists = np.empty((queries.size, width))
    step = max(1, FALLBACK_CELLS // centred.shape[0])
    for start in range(0, queries.size, step):
        part = queries[start : start + step]
        approx = norms[part, None] + norms[None, :] - 2.0 * (centred[part] @ centred.T)
        slack = 4 * gamma * (np.sqrt(norms[part]) + far) ** 2
        reach = (limit[start : start + part.size] * (1 + 1e-9)) ** 2 + slack
        rows, cols = np.nonzero(approx <= reach[:, None])
        items[start : start + part.size], dists[start : start + part.size] = _lists(
            dist, part, rows, cols, width
        )
    return items, dists


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
    the given coordinates; ties by index) and their float64 distances, nearest first.
    ``threads``: faiss's threads for this search (set in the calling thread). ``progress(share)``
    is called after each chunk of distinct queries. ``queries``: only the first so many points'
    neighbours (among all points), e.g. to measure a part of a large search."""
    x = np.ascontiguousarray(points, dtype=np.float64)
    n = x.shape[0]
    if x.ndim != 2 or n < 2:
        raise ValueError("need at least two points as an (n, d) array")
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be between 1 and n - 1 = {n - 1}, got {k}")
    if not np.all(np.isfinite(x)):
        raise ValueError("the points must be finite")
    if x.shape[1] == 0:  # a metric that ignores everything: every distance is 0
        x = np.zeros((n, 1))
    total = n if queries is None else min(n, int(queries))
    dist = _Distinct.of(x)
    wanted = np.unique(dist.inverse[:total])  # the distinct queries
    mean = dist.rows.mean(axis=0)
    points32 = np.empty(dist.rows.shape, dtype=np.float32)  # centred, in chunks: no float64 copy
    norms = np.empty(dist.rows.shape[0])
    for start in range(0, norms.size, HASH_CHUNK):
        centred = dist.rows[start : start + HASH_CHUNK] - mean
        points32[start : start + HASH_CHUNK] = centred
        norms[start : start + HASH_CHUNK] = np.sqrt(np.einsum("ud,ud->u", centred, centred))
    fast = faiss is not None if use_faiss is None else use_faiss
    search = (_candidates_faiss if fast else _candidates_sklearn)(points32, threads)
    u, width = dist.rows.shape[0], k + 1
    m = min(u, width + RERANK)
    lists = np.empty((wanted.size, width), dtype=np.int64)
    lists_d = np.empty((wanted.size, width))
    failed = []
    for start in range(0, wanted.size, chunk):
        part = wanted[start : start + chunk]
        squared, found = search(points32[part], m)
        found = np.asarray(found, dtype=np.int64)
        lost = (found < 0).any(axis=1)  # not expected (finite points): searched again below
        found = np.where(found < 0, part[:, None], found)
        rows = np.repeat(np.arange(part.size), m)
        items, ds = _lists(dist, part, rows, found.ravel(), width)
        ds[lost, -1] = np.inf  # re-searched without a limit
        lists[start : start + part.size], lists_d[start : start + part.size] = items, ds
        if m < u:  # some points were left out: is each list's end certain?
            sq_err, round_err = _float32_error(norms[part], float(norms.max()), x.shape[1])
            floor = np.sqrt(np.maximum(squared.max(axis=1) - sq_err, 0.0)) - round_err
            lost |= ~(floor > ds[:, -1] * (1 + 1e-9))
        failed.append(start + np.flatnonzero(lost))
        if progress is not None:
            progress(min(start + chunk, wanted.size) / wanted.size)
    redo = np.concatenate(failed) if failed else np.zeros(0, dtype=np.int64)
    if redo.size:
        lists[redo], lists_d[redo] = _exact_again(
            dist, mean, wanted[redo], lists_d[redo, -1], width
        )
    if (lists < 0).any():  # pragma: no cover - a search that found too few
        raise RuntimeError("the neighbour search returned fewer than k neighbours")
    return _per_item(lists, lists_d, np.searchsorted(wanted, dist.inverse[:total]), k)


def _per_item(
    lists: np.ndarray, lists_d: np.ndarray, which: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Item i's neighbours: its distinct point's list (``which[i]``) without i itself (or
    without the list's last entry when i is not on it)."""
    items, ds = lists[which], lists_d[which]
    keep = items != np.arange(which.size)[:, None]
    keep[keep.all(axis=1), -1] = False
    return items[keep].reshape(-1, k), ds[keep].reshape(-1, k)
