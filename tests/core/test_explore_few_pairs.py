"""EXPLORE on a few dozen pairs in many dimensions (issue 25): the penalty path comes down from
the prior, the fit never falls far below the constant prediction on fresh pairs, and the
held-out comparisons with the constant and the prior are paired figures on the same pairs."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit

from learning.core._explore_path import PATH_MAX
from learning.core._pairloss import pair_loglik, quad_forms
from learning.core._validation import stratified_folds
from learning.core.explore import EXPLORE


def _world(seed: int, n: int, d: int = 40, flip: float = 0.1):
    """Differences with very different column scales (like one-hot and standardised columns), a
    rule on two columns, a share ``flip`` of answers flipped."""
    rng = np.random.default_rng(seed)
    scales = np.where(np.arange(d) < 7, 1.0, 0.4)

    def draw(m):
        z = rng.standard_normal((m, d)) * scales
        z[:, 7:] = np.round(z[:, 7:])  # mostly 0, some ±1: one-hot differences
        p = 2.0 * expit(-(z[:, 0] ** 2 + z[:, 1] ** 2))
        y = (rng.random(m) < p).astype(float)
        flipped = rng.random(m) < flip
        return z, np.where(flipped, 1.0 - y, y)

    return draw(n), draw(20_000)


def test_few_pairs_come_down_from_the_prior_and_stay_near_or_above_the_constant():
    for seed in range(3):
        for n in (20, 60):
            (z, y), (zf, yf) = _world(seed, n)
            m = EXPLORE(random_state=0).fit_differences(z, y)
            assert max(b for b, _ in m.alpha_path_) == PATH_MAX  # the path starts at the prior
            fresh = float(np.mean(pair_loglik(np.maximum(quad_forms(zf, m.sigma_), 0), yf)))
            rate = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
            constant = float(np.mean(yf * np.log(rate) + (1 - yf) * np.log1p(-rate)))
            assert fresh >= constant - 0.05, (seed, n, fresh, constant)


def test_heldout_baselines_are_the_constant_and_the_prior_on_the_same_pairs():
    (z, y), _ = _world(5, 60)
    m = EXPLORE(random_state=0).fit_differences(z, y)
    base = m.heldout_baselines_
    constant = []
    for train, val in stratified_folds(y, kfold=True):
        rate = y[train].mean()
        constant.append(y[val] * np.log(rate) + (1 - y[val]) * np.log1p(-rate))
    assert np.isclose(base["constant"]["loglik"], np.mean(np.concatenate(constant)))
    held = np.isfinite(m.heldout_distances_)
    assert held.all()
    # the prior each fold's pairs are scored by: the identity scaled on the fold's training
    # pairs alone (the scale sets the prior's comparable rate; chosen on all pairs it had seen
    # the held-out labels: benchmarks/informative_null.py)
    sq = np.einsum("ij,ij->i", z, z)
    prior = []
    for train, val in stratified_folds(y, kfold=True):
        best = minimize_scalar(
            lambda t, tr=train: -np.mean(pair_loglik(np.exp(t) * sq[tr], y[tr])),
            bounds=(-20.0, 5.0),
            method="bounded",
            options={"xatol": 1e-8},
        )
        prior.append(pair_loglik(np.exp(best.x) * sq[val], y[val]))
    # (EXPLORE's scale search stops within ~1 % of the best scale: 5e-5 here)
    assert abs(base["prior"]["loglik"] - np.mean(np.concatenate(prior))) < 3e-4
    everywhere = np.mean(pair_loglik(np.maximum(quad_forms(z, m.prior_), 0.0), y))
    assert abs(base["prior"]["loglik"] - everywhere) > 1e-3  # scaled on all pairs: -0.0025
    for part in base.values():  # paired: the gain is the difference of the two means
        assert np.isclose(part["gain"], m.heldout_loglik_ - part["loglik"])
        lo, hi = part["gain_ci"]
        assert lo <= part["gain"] <= hi
