"""The active-learning scores (annotation/labelling/strategies.py) against independent computations."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose
from scipy.special import expit

from annotation.labelling import strategies


def test_pair_information_is_the_fisher_information_of_the_response_model():
    # I(q) = E[(d/dq log P(y | q))²] with P(y=1) = 2σ(-q): by finite differences, summed over y.
    q = np.array([0.05, 0.3, 1.0, 2.0, 5.0])
    step = 1e-6

    def loglik(y, t):
        p = 2 * expit(-t)
        return np.log(p) if y else np.log1p(-p)

    p = 2 * expit(-q)
    score1 = (loglik(1, q + step) - loglik(1, q - step)) / (2 * step)
    score0 = (loglik(0, q + step) - loglik(0, q - step)) / (2 * step)
    expected = p * score1**2 + (1 - p) * score0**2
    assert_allclose(strategies.pair_information(q), expected, rtol=1e-5)


def test_a_pair_like_the_recent_answers_gains_less_than_a_new_direction():
    d = 6
    factor = np.eye(d)
    seen = np.zeros(d)
    seen[0] = 1.0
    fresh = np.zeros(d)
    fresh[1] = 1.0
    z = np.stack([seen, fresh])
    q = np.einsum("ij,ij->i", z, z)  # equal: the same information on their own
    recent = np.repeat(seen[None], 50, axis=0)  # the crowd just answered 50 pairs like `seen`
    gain = strategies.information_gain(
        z, q, recent, np.einsum("ij,ij->i", recent, recent), strategies.leading_directions(factor)
    )
    assert gain[1] > 2 * gain[0]
    alone = strategies.information_gain(
        z, q, recent[:0], q[:0], strategies.leading_directions(factor)
    )
    assert_allclose(alone[0], alone[1])


def test_the_targeted_pick_is_the_candidate_nearest_the_target_probability():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 5)) * 0.5
    q = np.einsum("ij,ij->i", z, z)
    p = 2 * expit(-q)
    picks = [strategies.targeted_pick(q, rng, explore=0.0)[0] for _ in range(5)]
    nearest = int(np.argmin(np.abs(p - strategies.TARGET_P)))
    assert picks == [nearest] * 5


def test_the_targeted_pick_explores_at_its_share():
    rng = np.random.default_rng(1)
    q = np.linspace(0.01, 5, 100)
    nearest = int(np.argmin(np.abs(2 * expit(-q) - strategies.TARGET_P)))
    picks = [strategies.targeted_pick(q, rng, explore=0.3) for _ in range(4000)]
    explored = np.mean([score is None for _, score in picks])
    assert 0.26 < explored < 0.34
    assert all(i == nearest for i, score in picks if score is not None)
