"""Held-out figures that stay held out (issue 25): a prior learned from the pairs themselves is
refitted per validation fold (``validation_priors``), the fold fits' spread enters the interval
as a random effect, and the drift test compares paired gains over the constant."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from learning.core._pairloss import pair_loglik, quad_forms, weighted_mean_ci
from learning.core.drift import answers_fit_change
from learning.core.explore import EXPLORE
from learning.core.face import FACE


def test_fold_spread_enters_the_interval_as_a_random_effect_by_hand():
    values, w = np.array([0.0] * 4 + [1.0] * 4), np.ones(8)
    mean, (low, high) = weighted_mean_ci(values, w)
    assert mean == 0.5
    iid = np.sqrt(8 * 0.25 / 7 / 8)  # s/√m with s² = Σ(v - 0.5)² / 7
    assert high - mean == pytest.approx(1.96 * iid)
    # two folds, each scored by its own fit: means 0 and 1, no spread within → τ² = 0.5
    _, (low, high) = weighted_mean_ci(values, w, [4, 4])
    assert high - mean == pytest.approx(1.96 * np.sqrt(iid**2 + 0.5 / 2))
    # folds whose means agree add nothing
    mixed = np.array([0.0, 1.0] * 4)
    assert weighted_mean_ci(mixed, w, [4, 4]) == weighted_mean_ci(mixed, w)


def test_answers_fit_change_compares_paired_gains_with_the_promise_by_hand():
    """Each answer scores ln ½ under Σ = I (zᵀz = ln 3); the older version's constant predicts
    a comparable rate of ¼: a comparable answer gains ln ½ − ln ¼, an incomparable ln ½ − ln ¾."""
    z = np.zeros((6, 3))
    z[:, 0] = np.sqrt(np.log(3.0))
    y = np.array([1, 0, 1, 0, 1, 1])
    found = answers_fit_change(
        np.eye(3), z, y, -0.5, (-0.6, -0.4), promised=(0.1, (0.0, 0.2), 0.25)
    )
    gain = np.log(0.5) - np.where(y == 1, np.log(0.25), np.log(0.75))
    assert found.gain == pytest.approx(gain.mean())
    assert found.promised_gain == 0.1
    spread = np.hypot(gain.std(ddof=1) / np.sqrt(6), 0.2 / (2 * 1.959964))
    assert found.z_gain == pytest.approx((gain.mean() - 0.1) / spread)
    assert answers_fit_change(np.eye(3), z, y, -0.5, (-0.6, -0.4)).z_gain is None


def _world(seed: int, n: int):
    """Items in d = 30; a rank-2 rule; n answered pairs, and 20,000 fresh ones."""
    rng = np.random.default_rng(seed)
    items = rng.standard_normal((400, 30))
    rule = np.zeros((30, 30))
    rule[0, 0], rule[1, 1] = 1.5, 1.0

    def pairs(m):
        a, b = rng.integers(0, 400, (2, m))
        keep = a != b
        a, b = a[keep], b[keep]
        z = items[a] - items[b]
        return a, b, z, (rng.random(a.size) < 2 * expit(-quad_forms(z, rule))).astype(float)

    return items, pairs(n), pairs(20_000)


def _face(items, a, b, y, keep):
    comparable = keep & (y == 1)
    return FACE(n_components=10).fit(items, np.stack([a[comparable], b[comparable]], 1)).sigma_


def test_a_prior_that_saw_the_held_out_pairs_flatters_them_and_fold_priors_do_not():
    items, (a, b, z, y), (_, _, fz, fy) = _world(3, 120)
    folds = np.arange(y.size) % 5
    everything = np.ones(y.size, dtype=bool)
    leaky = EXPLORE(prior=_face(items, a, b, y, everything)).fit_differences(z, y, validation=folds)
    priors = [_face(items, a, b, y, folds != f) for f in range(5)]
    honest = EXPLORE(prior=_face(items, a, b, y, everything)).fit_differences(
        z, y, validation=folds, validation_priors=priors
    )
    rate = y.mean()
    constant = np.mean(fy * np.log(rate) + (1 - fy) * np.log1p(-rate))
    fresh = np.mean(pair_loglik(quad_forms(fz, honest.sigma_), fy)) - constant
    promised = {m: m.heldout_baselines_["constant"]["gain"] for m in (leaky, honest)}
    assert promised[leaky] > promised[honest] + 0.05  # the leak
    low, high = honest.heldout_baselines_["constant"]["gain_ci"]
    assert low <= fresh <= high
    # the final fit is the same: only the held-out figures change
    assert np.allclose(leaky.sigma_, honest.sigma_, atol=1e-3 * np.abs(leaky.sigma_).max())


def test_validation_priors_equal_to_the_prior_change_nothing_and_bad_ones_raise():
    items, (a, b, z, y), _ = _world(4, 100)
    folds = np.arange(y.size) % 5
    prior = _face(items, a, b, y, np.ones(y.size, dtype=bool))
    plain = EXPLORE(prior=prior).fit_differences(z, y, validation=folds)
    same = EXPLORE(prior=prior).fit_differences(
        z, y, validation=folds, validation_priors=[prior] * 5
    )
    assert same.heldout_loglik_ == pytest.approx(plain.heldout_loglik_, abs=1e-9)
    with pytest.raises(ValueError, match="one prior per fold"):
        EXPLORE(prior=prior).fit_differences(z, y, validation=folds, validation_priors=[prior])
    with pytest.raises(ValueError, match="needs validation"):
        EXPLORE(prior=prior).fit_differences(z, y, validation_priors=[prior] * 5)
    with pytest.raises(ValueError, match="matrix"):
        EXPLORE().fit_differences(z, y, validation=folds, validation_priors=[np.eye(3)] * 5)


def _equal_norm_coin_flips(seed: int):
    """Coin flips on 60 pairs whose differences all have ‖z‖² = 2 (as one-hot records that
    differ in one category): the scaled identity prior predicts one rate for every pair."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((60, 5))
    z *= np.sqrt(2.0) / np.linalg.norm(z, axis=1, keepdims=True)
    return z, (rng.random(60) < 0.5).astype(float), np.arange(60) % 5


def test_on_equal_norms_each_folds_prior_is_its_training_rate_like_the_constant():
    """By hand: ``2σ(-2c)`` can be any rate, so a fold's prior with its scale chosen on the
    training pairs predicts the training rate — the constant prediction itself. Scaled on all
    pairs it predicted the rate of all pairs, held-out answers included, and beat the constant
    by +0.004 to +0.040 per answer on these coin flips (on seed 1 with its whole interval above
    0: pure noise judged informative)."""
    for seed in range(5):
        z, y, folds = _equal_norm_coin_flips(seed)
        base = EXPLORE().fit_differences(z, y, validation=folds).heldout_baselines_
        assert abs(base["prior"]["loglik"] - base["constant"]["loglik"]) < 1e-3, seed


def test_a_folds_fit_never_sees_its_held_out_labels():
    """At a fixed penalty (no penalty choice), flipping the answers of the pairs fold 0 holds out
    leaves fold 0's fit — its held-out distances — exactly as it was: the fold's prior scale and
    penalty metric come from its training pairs alone (scaled on all pairs, the distances moved
    by up to 0.34)."""
    for seed in range(3):
        z, y, folds = _equal_norm_coin_flips(seed)
        flipped = np.where(folds == 0, 1.0 - y, y)
        one, two = (
            EXPLORE(alpha=1.0).fit_differences(z, labels, validation=folds)
            for labels in (y, flipped)
        )
        held = folds == 0
        assert np.array_equal(one.heldout_distances_[held], two.heldout_distances_[held]), seed
        assert not np.array_equal(one.heldout_distances_[~held], two.heldout_distances_[~held])
