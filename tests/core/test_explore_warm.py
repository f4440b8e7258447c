"""Warm starts (issue 30): EXPLORE and the reliability EM started from a previous fit of almost
the same data reach what a cold fit reaches, within the fits' own tolerances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from learning.core.explore import EXPLORE, ExploreWarm
from learning.core.reliability import ReliableEXPLORE

from .test_reliability import crowd


def pairs(n: int, d: int = 5, seed: int = 0):
    """Differences and labels from the response model with a rank-2 Σ₀ (n ≫ d²: the floor)."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((d, 2))
    z = rng.standard_normal((n, d)) * 0.7
    p = 2 * expit(-np.einsum("ij,jk,ik->i", z, g @ g.T, z))
    return z, (rng.random(n) < p).astype(float)


def test_a_warm_fit_of_a_few_more_pairs_matches_a_cold_one():
    z, y = pairs(4000)
    before = EXPLORE(random_state=0).fit_differences(z[:3900], y[:3900])
    cold = EXPLORE(random_state=0).fit_differences(z, y)
    warm = EXPLORE(random_state=0, warm_start=before.warm_state_).fit_differences(z, y)
    assert warm.alpha_ == cold.alpha_ == 1 / 4000  # the floor: n ≫ d²
    assert abs(warm.heldout_loglik_ - cold.heldout_loglik_) <= 1e-4
    assert abs(warm.loglik_ - cold.loglik_) <= 1e-4
    assert warm.n_iter_ <= cold.n_iter_
    assert len(before.warm_state_.folds) == 5


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_a_foreign_warm_start_changes_nothing_beyond_tolerance(scale):
    z, y = pairs(3000, seed=2)
    rng = np.random.default_rng(3)
    g = rng.standard_normal((5, 5))
    foreign = ExploreWarm(scale * g @ g.T, tuple(scale * g @ g.T for _ in range(5)))
    cold = EXPLORE(random_state=0).fit_differences(z, y)
    warm = EXPLORE(random_state=0, warm_start=foreign).fit_differences(z, y)
    assert abs(warm.heldout_loglik_ - cold.heldout_loglik_) <= 1e-4
    assert abs(warm.loglik_ - cold.loglik_) <= 1e-4
    wrong = ExploreWarm(np.eye(4), (np.eye(4),))  # another space, another number of folds
    other = EXPLORE(random_state=0, warm_start=wrong).fit_differences(z, y)
    assert other.heldout_loglik_ == cold.heldout_loglik_


def test_without_refit_the_fit_is_the_validation_fit():
    z, y = pairs(3000, seed=4)
    full = EXPLORE(random_state=0).fit_differences(z, y)
    only = EXPLORE(random_state=0, refit=False).fit_differences(z, y)
    assert only.n_iter_ == 0
    assert only.heldout_loglik_ == full.heldout_loglik_
    assert only.alpha_ == full.alpha_
    assert only.loglik_ <= full.loglik_ + 1e-12  # the fit on all pairs is at least as good there


def test_a_warm_em_lands_where_a_cold_one_does_within_its_tolerance():
    _, z, y, a, rates, _ = crowd(seed=7, noisy_share=0.3)
    pair = np.arange(y.size) // 3
    first = ReliableEXPLORE().fit_differences(z[:-30], y[:-30], a[:-30], pair=pair[:-30])
    cold = ReliableEXPLORE().fit_differences(z, y, a, pair=pair)
    warm = ReliableEXPLORE().fit_differences(z, y, a, pair=pair, warm=first.warm_state_)
    assert warm.n_iter_ <= cold.n_iter_
    gap = np.abs(warm.reliability_.flip_rate - cold.reliability_.flip_rate)
    assert gap.max() <= 0.02  # the EM stops at a flip-rate change of 5e-3 per step
    assert np.abs(warm.reliability_.flip_rate - rates).max() <= 0.12
    norm = np.linalg.norm(cold.sigma_)
    assert np.linalg.norm(warm.sigma_ - cold.sigma_) <= 0.1 * norm
