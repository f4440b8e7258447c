"""The one-coin EM (learning/core/reliability.py) on simulated crowds with known flip rates."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit

from learning.core.reliability import ReliableEXPLORE


def crowd(
    seed: int, noisy_share: float, flip: float = 0.3, base: float = 0.02, d: int = 8, pairs=1500
):
    """Σ₀ of rank 3; each pair has one true label (drawn from Σ₀'s response model) and is
    answered by 3 of 20 annotators, who flip it at rate ``base``, a share of them at ``flip``."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((d, 3))
    sigma0 = g @ g.T / 3
    z = rng.standard_normal((pairs, d)) * 0.6
    p = 2 * expit(-np.einsum("ij,jk,ik->i", z, sigma0, z))
    truth = (rng.random(pairs) < p).astype(float)
    n_annotators = 20
    rates = np.full(n_annotators, base)
    rates[: int(round(noisy_share * n_annotators))] = flip
    who = np.stack([rng.choice(n_annotators, 3, replace=False) for _ in range(pairs)])
    zz = np.repeat(z, 3, axis=0)
    t = np.repeat(truth, 3)
    a = who.ravel()
    flipped = rng.random(a.size) < rates[a]
    y = np.where(flipped, 1 - t, t)
    return sigma0, zz, y, a, rates, t


def test_one_pair_posterior_by_hand():
    # After one EM step the soft label of pair 0 is Bayes' rule with the prior-mean flip rate
    # 0.1 for each of its three answers and p from the plain (first) fit.
    sigma0, z, y, a, _, _ = crowd(seed=5, noisy_share=0.3)
    fit = ReliableEXPLORE(max_iter=1).fit_differences(z, y, a, pair=np.arange(y.size) // 3)
    q = np.einsum("j,jk,k->", z[0], fit.plain_.sigma_, z[0])
    prior_odds = 2 * expit(-q) / (1 - 2 * expit(-q))
    ratio = np.prod([(0.9 / 0.1) if v == 1 else (0.1 / 0.9) for v in y[:3]])
    expected = prior_odds * ratio / (1 + prior_odds * ratio)
    assert_allclose(fit.soft_labels_[0], expected, rtol=1e-6)


def test_flip_rates_are_recovered_within_their_intervals():
    sigma0, z, y, a, rates, _ = crowd(seed=1, noisy_share=0.3)
    fit = ReliableEXPLORE().fit_differences(z, y, a, pair=np.arange(y.size) // 3)
    rel = fit.reliability_
    assert_allclose(rel.annotator, np.arange(20))
    inside = (rel.interval[:, 0] <= rates) & (rates <= rel.interval[:, 1])
    assert inside.mean() >= 0.9, (rel.flip_rate, rel.interval)
    assert rel.flip_rate[rates == 0.3].min() > rel.flip_rate[rates < 0.3].max()


def test_weighted_sigma_is_closer_to_the_truth_than_plain_with_30_percent_noisy():
    for seed in (2, 3):
        sigma0, z, y, a, _, _ = crowd(seed=seed, noisy_share=0.3)
        fit = ReliableEXPLORE().fit_differences(z, y, a, pair=np.arange(y.size) // 3)
        err_w = np.linalg.norm(fit.sigma_ - sigma0) / np.linalg.norm(sigma0)
        err_p = np.linalg.norm(fit.plain_.sigma_ - sigma0) / np.linalg.norm(sigma0)
        assert err_w < err_p, (seed, err_w, err_p)


def test_gold_answers_pin_the_flip_rate():
    sigma0, z, y, a, rates, truth = crowd(seed=4, noisy_share=0.3)
    gold = np.where(np.arange(y.size) % 4 == 0, truth, np.nan)
    rel = (
        ReliableEXPLORE()
        .fit_differences(z, y, a, pair=np.arange(y.size) // 3, gold=gold)
        .reliability_
    )
    rel_no = ReliableEXPLORE().fit_differences(z, y, a, pair=np.arange(y.size) // 3).reliability_
    width = np.diff(rel.interval, axis=1).ravel()
    assert np.all(np.abs(rel.flip_rate - rates) < 0.12)
    assert width.mean() <= np.diff(rel_no.interval, axis=1).mean() + 1e-12


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="same answers"):
        ReliableEXPLORE().fit_differences(np.ones((3, 2)), [1, 0, 1], [1, 2])
    with pytest.raises(ValueError, match="prior"):
        ReliableEXPLORE(prior=(0, 1)).fit_differences(np.ones((2, 2)), [1, 0], [1, 2])
