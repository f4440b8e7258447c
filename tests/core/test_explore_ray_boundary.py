"""EXPLORE's one-split penalty search when the ray through its first fold fit leaves the PSD cone
before the validation optimum (issue 35: the Adult pairs). A low-rank truth puts the fits on the
cone's boundary, so the ray ``Π + s·(S₀ − Π)`` cannot go past ``S₀``; the first-order condition
read there (a constraint, not the validation optimum) gave a penalty 10⁵ times too strong and a
fit far below the MLE on fresh pairs. The search now walks the path instead."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

import learning.core._explore_path as path
from learning.core._explore_ray import RAY_S_MAX
from learning.core._pairloss import pair_loglik, quad_forms
from learning.core.explore import EXPLORE, kfold_validation


def _boundary_world(seed: int = 0, n: int = 15_000, d: int = 40):
    """A rank-3 truth in d = 40 (37 directions of weight 0), differences N(0, 0.3²): 15,000
    pairs × 40 is past k-fold validation (one split, the ray) and below the floor's n ≫ d²."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((d, 3))
    sigma0 = 3.0 * g @ g.T / d
    z = 0.3 * rng.standard_normal((n + 40_000, d))
    y = (rng.uniform(size=len(z)) < 2.0 * expit(-quad_forms(z, sigma0))).astype(float)
    return sigma0, z[:n], y[:n], z[n:], y[n:]


def test_a_ray_cut_short_by_the_psd_cone_walks_the_path_and_fits_as_well_as_the_truth(
    monkeypatch,
):
    sigma0, z, y, zt, yt = _boundary_world()
    assert not kfold_validation(*z.shape)  # the one-split regime
    readings = []
    original = path.ray_choice

    def spy(*args, **kwargs):
        readings.append(original(*args, **kwargs))
        return readings[-1]

    monkeypatch.setattr(path, "ray_choice", spy)
    fit = EXPLORE().fit_differences(z, y)
    first = readings[0]
    # the case this test is about: the validation likelihood still rises where the ray leaves
    # the cone (s = limit < RAY_S_MAX)
    assert first.blocked
    assert first.s == first.limit < RAY_S_MAX
    rate = y.mean()
    constant = np.mean(np.where(yt > 0.5, np.log(rate), np.log1p(-rate)))

    def fresh(sigma):  # gain over the constant per fresh pair
        return float(np.mean(pair_loglik(quad_forms(zt, sigma), yt))) - constant

    # before: penalty 8.2 from a first one of 10.5, +0.029 per fresh pair against the truth's
    # +0.118 and the MLE's +0.112; now the walk comes down to ~1e-4 (+0.112)
    assert fresh(fit.sigma_) > fresh(sigma0) - 0.015
    assert fit.alpha_ < 1e-2 * first.beta
    assert len(fit.alpha_path_) >= 3  # the walk's fits
    assert fit.heldout_loglik_ > float(np.mean(pair_loglik(quad_forms(z, fit.prior_), y)))


def test_an_interior_ray_is_not_blocked_and_keeps_its_reading(monkeypatch):
    # issue 13's low-rank case 4 (rank 30 in d = 60) with 10,000 pairs (one split): the
    # validation optimum lies inside the cone, the ray's reading stands (no walk)
    rng = np.random.default_rng(12)
    d = 60
    g = rng.standard_normal((d, 30))
    sigma0 = 1.36 * g @ g.T / d
    z = 0.11 * rng.standard_normal((10_000, d))
    y = (rng.uniform(size=len(z)) < 2.0 * expit(-quad_forms(z, sigma0))).astype(float)
    readings = []
    original = path.ray_choice

    def spy(*args, **kwargs):
        readings.append(original(*args, **kwargs))
        return readings[-1]

    monkeypatch.setattr(path, "ray_choice", spy)
    assert not kfold_validation(*z.shape)
    fit = EXPLORE().fit_differences(z, y)
    assert readings
    assert not any(r.blocked for r in readings)
    assert fit.alpha_ == readings[-1].beta
