"""Pair differences kept between refits (learning/core/explore_data/differences.py): extended by
new pairs they equal a fresh build, and fits on them equal fits on the plain array (issue 30)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

from learning.core._explore_problem import Problem
from learning.core._pairloss import PairBlocks, PairDifferences, quad_forms
from learning.core.explore import EXPLORE, Differences
from learning.core.reliability import ReliableEXPLORE

from .test_explore_warm import pairs
from .test_reliability import crowd


def test_extended_differences_equal_a_fresh_build():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3000, 6))
    sigma = np.cov(rng.standard_normal((6, 20)))
    base = Differences(z[:2900], spare=0.02)  # room for 58 rows: the first extension in place
    base.distances(sigma, np.float32)  # remembered, then extended with the rows
    grown = base.extend(z[2900:2950]).extend(z[2950:])  # the second one copies (no room left)
    fresh = Differences(z)
    assert_array_equal(grown.z, z)
    assert_array_equal(grown.sq, fresh.sq)
    assert_array_equal(grown.work(np.float32), z.astype(np.float32))
    assert_allclose(grown.second(), fresh.second(), rtol=1e-12, atol=1e-14)
    assert_allclose(grown.distances(sigma, np.float32), quad_forms(z.astype(np.float32), sigma))
    assert_allclose(grown.distances(3.0 * sigma, np.float32), 3.0 * fresh.distances(sigma, "f4"))
    assert base.z.shape == (2900, 6)  # the old rows' view is unchanged


def test_two_extensions_of_one_base_do_not_overwrite_each_other():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((200, 4))
    base = Differences(z, spare=0.5)
    a = base.extend(np.ones((10, 4)))
    b = base.extend(np.full((10, 4), 2.0))  # base no longer holds the buffer's last row: a copy
    assert_array_equal(a.z[200:], 1.0)
    assert_array_equal(b.z[200:], 2.0)
    assert_array_equal(a.work(np.float32)[200:], 1.0)


def test_refused_rows():
    with pytest.raises(ValueError, match="NaN or inf"):
        Differences(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN or inf"):
        Differences(np.ones((3, 2))).extend(np.array([[np.inf, 0.0]]))


def test_sorted_rows_extended_by_blocks_equal_a_gather():
    """A problem's rows sorted into label blocks, kept and extended by new pairs (the next
    refit), equal the gather a fresh problem makes — all pairs and a training part."""
    rng = np.random.default_rng(2)
    z = rng.standard_normal((1000, 5))
    y = rng.choice([0.0, 1.0, 0.5], size=1000, p=[0.5, 0.4, 0.1])
    train = rng.random(1000) > 0.2
    before = Differences(z[:950], spare=0.1)
    after = before.extend(z[950:])
    for rows in (np.arange(1000), np.flatnonzero(train)):
        old = rows[rows < 950]
        key_old = np.full(950, -1, dtype=np.int8)
        key_old[old] = PairBlocks.keys(y[old])
        before.blocked(key_old, old[PairBlocks.order(y[old])], np.float32)
        key = np.full(1000, -1, dtype=np.int8)
        key[rows] = PairBlocks.keys(y[rows])
        idx = rows[PairBlocks.order(y[rows])]
        kept = after.blocked(key, idx, np.float32)
        assert_array_equal(kept, z.astype(np.float32)[idx])
        assert after.blocked(key, idx, np.float32) is kept  # remembered


def test_problems_on_kept_differences_equal_problems_on_the_array():
    z, y = pairs(3000, d=6, seed=5)
    prior = 0.8 * np.eye(6) + 0.1
    data = Differences(z[:2950], spare=0.1)
    Problem(data, y[:2950], prior, data.second(), "mixed")  # remembers its sorted rows
    data = data.extend(z[2950:])
    kept = Problem(data, y, prior, data.second(), "mixed")
    plain = Problem(z, y, prior, data.second(), "mixed")
    assert_array_equal(kept.zw, plain.zw)
    assert_allclose(kept.d_prior, plain.d_prior, rtol=1e-6)
    assert_allclose(kept.weight, plain.weight, rtol=1e-6)


@pytest.mark.parametrize(("n", "d"), [(4000, 5), (30000, 20)])  # 5 folds; one split at the floor
def test_a_refit_on_kept_differences_equals_one_on_the_array(n, d):
    """A refit sequence: a fit on n - 50 pairs, then the n pairs warm-started from it — once on
    the kept differences extended by the 50 new pairs, once on a fresh array. The set-ups differ
    by float32 rounding only (the remembered prior distances are rescaled, ZᵀZ summed in another
    order), which the solvers' tolerances (1e-5 at the floor) may carry to ~1e-5 in the figures
    (and decide a near-tie between the floor and 10× it); both within 1e-4 of a cold fit's."""
    z, y = pairs(n, d=d, seed=6)
    prior = np.eye(d) + 0.2
    data = Differences(z[:-50], spare=0.1)
    before = EXPLORE(random_state=0, prior=prior).fit_differences(data, y[:-50])
    warm = before.warm_state_
    kept = EXPLORE(random_state=0, prior=prior, warm_start=warm)
    kept.fit_differences(data.extend(z[-50:]), y)
    fresh = EXPLORE(random_state=0, prior=prior, warm_start=warm).fit_differences(z, y)
    cold = EXPLORE(random_state=0, prior=prior).fit_differences(z, y)
    assert abs(kept.heldout_loglik_ - fresh.heldout_loglik_) <= 1e-5
    assert abs(kept.loglik_ - fresh.loglik_) <= 1e-5
    for fit in (kept, fresh):
        assert abs(fit.heldout_loglik_ - cold.heldout_loglik_) <= 1e-4
        assert abs(fit.loglik_ - cold.loglik_) <= 1e-4
        assert np.all(np.isfinite(fit.heldout_distances_) == np.isfinite(cold.heldout_distances_))


def test_the_em_on_kept_differences_equals_the_em_on_the_array():
    """Pairs numbered in any order (the app numbers them by their items): the EM on
    ``Differences`` orders them by first answer, and lands where the EM on the array does."""
    _, z, y, a, _, _ = crowd(seed=8, noisy_share=0.3)
    codes = np.random.default_rng(0).permutation(y.size // 3)
    pair = codes[np.arange(y.size) // 3]
    on_array = ReliableEXPLORE().fit_differences(z, y, a, pair=pair)
    on_kept = ReliableEXPLORE().fit_differences(Differences(z), y, a, pair=pair)
    assert on_kept.n_iter_ == on_array.n_iter_
    assert_allclose(on_kept.reliability_.flip_rate, on_array.reliability_.flip_rate, atol=1e-6)
    assert_allclose(on_kept.sigma_, on_array.sigma_, atol=1e-5 * np.abs(on_array.sigma_).max())
    # one answer per pair: the EM's pairs are the kept differences themselves (no copy)
    one = ReliableEXPLORE().fit_differences(Differences(z), y, a)
    assert one.explore_.n_features_in_ == z.shape[1]


def indexed_pairs(n: int, d: int, seed: int = 9, rank: int | None = None):
    """Pairs of a 500-item matrix (of rank ``rank``: differences spanning fewer dimensions)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((500, d)) * 0.6
    if rank is not None:
        x = x @ np.linalg.qr(rng.standard_normal((d, rank)))[0] @ rng.standard_normal((rank, d))
    a = rng.integers(0, 500, n).astype(np.int32)
    b = ((a + 1 + rng.integers(0, 499, n)) % 500).astype(np.int32)
    g = rng.standard_normal((d, 2))
    z = x[a] - x[b]
    y = (rng.random(n) < 2 * expit(-np.einsum("ij,jk,ik->i", z, g @ g.T, z))).astype(float)
    return x, a, b, z, y


@pytest.mark.parametrize(
    ("n", "d", "rank"), [(3000, 6, None), (30000, 20, None), (3000, 6, 4), (12000, 50, None)]
)
def test_a_fit_over_pair_indices_equals_the_fit_on_the_array(n, d, rank):
    """Bounded memory (``PairDifferences``: rows built chunk by chunk) gives the same fit as the
    (n, d) array: five folds, one split at the floor, a span of fewer dimensions, the ray."""
    x, a, b, z, y = indexed_pairs(n, d, rank=rank)
    prior = np.eye(d) + 0.1
    on_array = EXPLORE(random_state=0, prior=prior).fit_differences(z, y)
    on_pairs = EXPLORE(random_state=0, prior=prior).fit_differences(PairDifferences(x, a, b), y)
    assert on_pairs.alpha_ == on_array.alpha_
    assert on_pairs.n_constrained_ == on_array.n_constrained_ == (rank or d)
    assert abs(on_pairs.heldout_loglik_ - on_array.heldout_loglik_) <= 1e-8
    assert abs(on_pairs.loglik_ - on_array.loglik_) <= 1e-8
    assert_allclose(on_pairs.sigma_, on_array.sigma_, atol=1e-6 * np.abs(on_array.sigma_).max())
    assert_allclose(on_pairs.heldout_distances_, on_array.heldout_distances_, rtol=1e-6)


def test_pair_indices_are_checked():
    x, a, b, _, y = indexed_pairs(100, 3)
    with pytest.raises(ValueError, match=r"in \[0, 500\)"):
        EXPLORE().fit_differences(PairDifferences(x, a, b + 500), y)
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="item matrix contains NaN"):
        EXPLORE().fit_differences(PairDifferences(bad, a, b), y)
