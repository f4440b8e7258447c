"""The drift flag's statistics: standard errors clustered by pair (by hand), and the study-level
false-alarm rate of the sequential rule under simulation (learning/core/drift.py,
learning/versions/drift.py: window_due, settle, version_level)."""

from __future__ import annotations

import numpy as np
import pytest

from learning.core.drift import (
    answer_gains,
    answer_surprises,
    cluster_mean_se,
    gain_shortfall,
    heldout_promise,
    spent_alpha,
)
from learning.versions.drift import WINDOW, DriftCheck, settle, version_level, window_due


def test_cluster_mean_se_by_hand():
    # values 1, 2 (one pair answered twice), 3, 6: mean 3, deviations -2, -1, 0, 3; cluster
    # sums -3, 0, 3; G = 3: se² = 3/2 · (9 + 0 + 9) / 4² = 1.6875
    mean, se = cluster_mean_se([1.0, 2.0, 3.0, 6.0], [7, 7, 8, 9])
    assert mean == 3.0
    assert se == pytest.approx(np.sqrt(1.6875), abs=1e-12)
    # every value its own cluster: the usual s/√n = √(14/3 / 4)
    assert cluster_mean_se([1.0, 2.0, 3.0, 6.0], [0, 1, 2, 3])[1] == pytest.approx(
        np.sqrt(14 / 12), abs=1e-12
    )
    assert cluster_mean_se([1.0, 2.0], [5, 5])[1] == np.inf  # one cluster: no error estimate


def test_repeated_answers_to_a_pair_widen_the_standard_error_to_the_truth():
    # a pair's two answers share its label: the naive s/√n is too small by about √2
    rng = np.random.default_rng(0)
    pair_effect = rng.standard_normal((20_000, 1))
    values = (pair_effect + 0.1 * rng.standard_normal((20_000, 2))).ravel()
    clusters = np.repeat(np.arange(20_000), 2)
    _, clustered = cluster_mean_se(values, clusters)
    _, naive = cluster_mean_se(values, np.arange(values.size))
    truth = np.sqrt((1.0 + 0.01 / 2) / 20_000)  # sd of the mean of the pair means
    assert clustered == pytest.approx(truth, rel=0.03)
    assert naive < 0.75 * truth


def test_heldout_promise_adds_the_spread_of_the_fold_fits():
    gains = np.array([0.1, 0.2, 0.3, 0.4, 1.1, 1.2, 1.3, 1.4])
    folds = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    mean, plain = cluster_mean_se(gains, np.arange(8))
    promise, se = heldout_promise(gains, np.arange(8), folds)
    assert promise == mean
    # fold means 0.25 and 1.25 (var 0.5), their own se² 0.00417: τ² ≈ 0.4958, added as τ²/2
    own = (np.var([0.1, 0.2, 0.3, 0.4], ddof=1) / 4) * 1.0
    assert se == pytest.approx(np.sqrt(plain**2 + (0.5 - own) / 2), rel=1e-9)


def test_the_budget_is_never_overspent():
    total, spent = 0.0, 0
    for answers in range(20, 100_001, 20):
        total += version_level(0.05, answers, spent)
        spent = answers
    assert total == pytest.approx(spent_alpha(0.05, 100_000))
    assert total < 0.05
    assert version_level(0.05, 400, 400) == 0.0  # no new answers: nothing to spend
    assert settle(DriftCheck(False, "x", z=-50.0), 0.0).flagged is False


def _study_flagged(rng, rate, *, spending, versions=50, step=20, sd=1.0) -> bool:
    """A stationary study's window checks on simulated gains (mean 0.1, ``sd`` per answer):
    each version promises the mean of its own held-out gains (a fifth of its answers); the
    answers ``WINDOW`` after it fall short by chance only. ``spending``: the app's rule; else
    every check at the full rate (a per-comparison rate, as before issue 35)."""
    gains = 0.1 + sd * rng.standard_normal(versions * step)
    promises = {}
    spent = 0
    for k in range(1, versions + 1):
        total = k * step
        held = 0.1 + sd * rng.standard_normal(total // 5)
        promises[total] = heldout_promise(held, np.arange(held.size))
        if not window_due(total, total - step) or total - WINDOW < step:
            continue
        gain = gains[total - WINDOW : total]
        z = gain_shortfall(gain, np.arange(gain.size), *promises[total - WINDOW])[2]
        level = version_level(rate, total, spent) if spending else rate
        spent = total
        if settle(DriftCheck(False, "", z=z), level).flagged:
            return True
    return False


def test_the_sequential_rule_keeps_the_study_level_rate():
    rng = np.random.default_rng(35)
    studies = 300
    flagged = sum(_study_flagged(rng, 0.05, spending=True) for _ in range(studies))
    assert flagged / studies <= 0.05
    # the same checks each at the full rate flag far more studies than the rate says
    former = sum(_study_flagged(rng, 0.05, spending=False) for _ in range(studies))
    assert former / studies > 0.15


def test_a_surprise_is_the_gain_less_its_expectation_and_is_zero_on_the_models_own_answers():
    rng = np.random.default_rng(3)
    d = rng.exponential(1.0, size=200_000)
    p = 0.1 + 0.8 * 2.0 * np.exp(-d) / (1.0 + np.exp(-d))  # the weighted model's, flips 0.1
    own = (rng.random(d.size) < p).astype(float)
    surprises = answer_surprises(d, own, 0.3, 0.1)
    # by hand: the gain less the gain of a fractional answer p
    expected = answer_gains(d, own, 0.3, 0.1) - answer_gains(d, p, 0.3, 0.1)
    np.testing.assert_allclose(surprises, expected, atol=1e-9)
    # answers that follow the model: mean 0 whatever pairs are kept (here the uncertain ones)
    uncertain = np.abs(p - 0.5) < 0.1
    for keep in (np.ones(d.size, bool), uncertain):
        mean, se = cluster_mean_se(surprises[keep], np.arange(keep.sum()))
        assert abs(mean) < 3 * se
    # answers under another rule (unrelated to d): clearly below 0
    other = (rng.random(d.size) < 0.3).astype(float)
    mean, se = cluster_mean_se(answer_surprises(d, other, 0.3, 0.1), np.arange(d.size))
    assert mean < -20 * se
