"""learning.audits.search.knn against a brute-force reference, with both back-ends."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learning.audits import search

# faiss-cpu is pinned in requirements.txt: its cases fail, not skip, on an install without it.
BACKENDS = [pytest.param(True, id="faiss"), pytest.param(False, id="scikit-learn")]


def brute(x: np.ndarray, k: int) -> np.ndarray:
    full = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    np.fill_diagonal(full, np.inf)
    return np.sort(full, axis=1)[:, :k]


@pytest.mark.parametrize("use_faiss", BACKENDS)
def test_neighbours_and_distances_match_brute_force(use_faiss):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(700, 6)) * [1, 1, 3, 0.1, 1, 10]
    idx, dist = search.knn(x, 9, use_faiss=use_faiss, chunk=128)
    assert_allclose(dist, brute(x, 9), atol=1e-12)
    # the returned indices are at the returned distances, never the point itself
    assert_allclose(np.linalg.norm(x[idx] - x[:, None], axis=2), dist, atol=1e-12)
    assert not (idx == np.arange(700)[:, None]).any()


@pytest.mark.parametrize("use_faiss", BACKENDS)
def test_exact_duplicates_are_neighbours_at_zero_but_never_oneself(use_faiss):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4))
    x[50:80] = x[50]  # 30 copies: more than k + 1 + RERANK
    idx, dist = search.knn(x, 5, use_faiss=use_faiss)
    assert not (idx == np.arange(200)[:, None]).any()
    assert_allclose(dist[50:80], 0.0)
    assert set(idx[50:80].ravel()) <= set(range(50, 80))
    assert_allclose(dist, brute(x, 5), atol=1e-12)


def test_a_metric_that_ignores_everything_puts_everyone_at_zero():
    idx, dist = search.knn(np.zeros((5, 0)), 2)
    assert_allclose(dist, 0.0)
    assert idx.shape == (5, 2)


def test_progress_is_reported_per_chunk():
    seen = []
    search.knn(np.random.default_rng(2).normal(size=(50, 3)), 3, chunk=20, progress=seen.append)
    assert seen == pytest.approx([0.4, 0.8, 1.0])


def test_bad_k_is_refused():
    with pytest.raises(ValueError, match="k must be between 1 and n - 1"):
        search.knn(np.zeros((3, 2)), 3)


def test_a_partial_search_gives_the_first_points_neighbours_among_all():
    x = np.random.default_rng(3).normal(size=(300, 4))
    whole_idx, whole_dist = search.knn(x, 4)
    idx, dist = search.knn(x, 4, queries=50, chunk=16)
    assert idx.shape == (50, 4)
    assert_allclose(dist, whole_dist[:50])


def brute_order(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each point's first k others by (float64 distance, index), the search's formula."""
    n = x.shape[0]
    a, b = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    full = search.pair_distances(x, a, b).reshape(n, n)
    np.fill_diagonal(full, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(n), full.shape), full), axis=-1)[:, :k]
    return order, np.take_along_axis(full, order, axis=1)


@pytest.mark.parametrize("use_faiss", BACKENDS)
def test_ties_are_broken_by_index_even_beyond_the_float32_candidates(use_faiss):
    """Corners of a 12-d cube, some of them copied: dozens of points at each list's last
    distance, more than the float32 candidates, so the float64 re-search decides those lists."""
    x = np.random.default_rng(4).integers(0, 2, size=(900, 12)).astype(np.float64)
    x[600:] = x[:300]
    for k in (1, 7, 40):
        idx, dist = search.knn(x, k, use_faiss=use_faiss, chunk=100)
        ref_idx, ref_dist = brute_order(x, k)
        np.testing.assert_array_equal(idx, ref_idx)
        np.testing.assert_array_equal(dist, ref_dist)


def test_far_from_the_origin_the_float32_error_bound_sends_lists_to_float64():
    """Points 10⁴ away from each other's scale: float32 cannot order them, the result is still
    the float64 order."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 5)) * 1e-3 + rng.choice([-1e4, 1e4], size=(400, 1))
    idx, dist = search.knn(x, 5)
    ref_idx, ref_dist = brute_order(x, 5)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_dist)


def test_rows_whose_hashes_collide_are_still_told_apart():
    """Two different rows built to share the grouping's hash: the word-for-word check notices,
    and the search still gives the brute force's neighbours."""
    m = [int(v) for v in search.row_multipliers(3)]
    a = np.array([0.5, 1.5, -2.0])
    words = [int(w) for w in a.view(np.uint64)]
    shift = 1 << 40
    words[0] = (words[0] + shift) % 2**64
    words[1] = (words[1] - shift * m[0] * pow(m[1], -1, 2**64)) % 2**64
    b = np.array(words, dtype=np.uint64).view(np.float64)
    assert not np.array_equal(a, b)
    assert np.isfinite(b).all()
    hashed = [
        sum(int(w) * f for w, f in zip(r.view(np.uint64), m, strict=True)) % 2**64 for r in (a, b)
    ]
    assert hashed[0] == hashed[1]
    rng = np.random.default_rng(6)
    x = np.vstack([a, b, a, rng.normal(size=(40, 3)), b, a])
    idx, dist = search.knn(x, 4)
    ref_idx, ref_dist = brute_order(x, 4)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_dist)
