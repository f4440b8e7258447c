"""Drift between two metrics: norms, principal angles, projector distance."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learning.core.drift import answers_fit_change, drift, sensitive_subspace


def _rotation_pair(theta, d=5):
    u1 = np.zeros(d)
    u1[0] = 1.0
    u2 = np.zeros(d)
    u2[0], u2[1] = np.cos(theta), np.sin(theta)
    return u1, u2


def test_identical_metrics_have_zero_drift():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((6, 6))
    s = g @ g.T
    r = drift(s, s.copy())
    assert r.operator_norm == 0.0
    assert r.frobenius_norm == 0.0
    assert_allclose(r.principal_angles, 0.0, atol=1e-7)
    assert r.subspace_distance < 1e-7


@pytest.mark.parametrize("theta", [0.1, 0.7, np.pi / 2])
def test_rotated_one_dimensional_sensitive_subspace_of_projectors(theta):
    u1, u2 = _rotation_pair(theta)
    s1, s2 = np.eye(5) - np.outer(u1, u1), np.eye(5) - np.outer(u2, u2)
    r = drift(s1, s2)
    assert r.projectors
    assert r.sensitive_dims == (1, 1)
    assert_allclose(r.principal_angles, [theta], atol=1e-12)
    assert_allclose(r.subspace_distance, np.sin(theta), atol=1e-12)
    assert_allclose(r.operator_norm, np.sin(theta), atol=1e-12)  # ‖P1 - P2‖_op
    assert_allclose(r.frobenius_norm, np.sqrt(2) * np.sin(theta), atol=1e-12)


def test_rotated_small_eigenvalue_direction_of_general_metrics():
    theta = 0.4
    u1, u2 = _rotation_pair(theta, d=4)
    base = np.diag([0.0, 2.0, 3.0, 4.0])

    def with_small(u):
        q, _ = np.linalg.qr(np.column_stack([u, np.eye(4)[:, 1:]]))
        q[:, 0] = u
        q, _ = np.linalg.qr(q)
        return q @ (base + np.diag([1e-3, 0, 0, 0])) @ q.T

    r = drift(with_small(u1), with_small(u2))
    assert not r.projectors
    assert r.sensitive_dims == (1, 1)
    assert_allclose(r.principal_angles, [theta], atol=1e-10)
    assert_allclose(r.subspace_distance, np.sin(theta), atol=1e-10)


def test_given_dimension_and_errors():
    assert sensitive_subspace(np.diag([3.0, 1.0, 2.0]), dim=2).shape == (3, 2)
    with pytest.raises(ValueError, match="same shape|differ in shape"):
        drift(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="positive semi-definite"):
        drift(np.eye(2), -np.eye(2))


def test_answers_fit_change_by_hand():
    """zᵀz = ln 3 under Σ = I gives P(comparable) = 2σ(−ln 3) = ½, so every answer, either label,
    scores ln ½; against a held-out figure −0.5 with interval (−0.6, −0.4) (se = 0.1 / 1.96)."""
    z = np.zeros((6, 3))
    z[:, 0] = np.sqrt(np.log(3.0))
    found = answers_fit_change(np.eye(3), z, [1, 0, 1, 0, 1, 1], -0.5, (-0.6, -0.4))
    assert found.answers == 6
    assert found.loglik == pytest.approx(-np.log(2.0))
    se = 0.1 / 1.959964
    assert found.z == pytest.approx((-np.log(2.0) + 0.5) / se)
    # Answers that fit as promised: z near 0; better than promised: positive.
    assert answers_fit_change(np.eye(3), z, [1] * 6, -np.log(2.0), (-0.8, -0.6)).z == (
        pytest.approx(0.0, abs=1e-12)
    )
    with pytest.raises(ValueError):
        answers_fit_change(np.eye(3), z[:1], [1], -0.5, (-0.6, -0.4))


def test_answers_fit_change_scores_a_reliability_fit_with_its_flip_rate():
    """z = 0: the model says comparable for sure; flipped at e = 0.1 an answer is comparable with
    probability 0.9, so three comparable and one incomparable answer score (3 ln 0.9 + ln 0.1) / 4
    (EXPLORE's own model would give ln 0 for the incomparable one)."""
    z = np.zeros((4, 2))
    found = answers_fit_change(np.eye(2), z, [1, 1, 1, 0], -0.5, (-0.6, -0.4), flip_rate=0.1)
    assert found.loglik == pytest.approx((3 * np.log(0.9) + np.log(0.1)) / 4)


def test_answers_fit_change_against_guessing_by_hand():
    """Each answer scores ln ½ under Σ; guessing the answers' own rate 4/6 scores ln ⅔ for a
    comparable and ln ⅓ for an incomparable answer; the paired differences give z_constant."""
    z = np.zeros((6, 3))
    z[:, 0] = np.sqrt(np.log(3.0))
    y = np.array([1, 0, 1, 0, 1, 1])
    found = answers_fit_change(np.eye(3), z, y, -0.5, (-0.6, -0.4))
    guess = np.where(y == 1, np.log(2 / 3), np.log(1 / 3))
    gain = np.log(0.5) - guess
    assert found.constant == pytest.approx(guess.mean())
    assert found.z_constant == pytest.approx(gain.mean() / (gain.std(ddof=1) / np.sqrt(6)))
