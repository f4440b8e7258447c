"""benchmarks/strategy_replica.py: the V-optimal design's bookkeeping and the quick run."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.conftest import ROOT, run_benchmark

sys.path.insert(0, str(ROOT / "benchmarks"))

import strategy_replica as sr


def test_noisy_information_is_the_flipped_models_fisher_information():
    """Against a numerical derivative of the flipped response model's log-likelihood."""
    q, eps, step = np.array([0.05, 0.4, 1.5, 4.0]), 0.1, 1e-5

    def p_obs(v):
        p = 2.0 / (1.0 + np.exp(v))
        return (1 - eps) * p + eps * (1 - p)

    slope = (p_obs(q + step) - p_obs(q - step)) / (2 * step)
    expected = slope**2 / (p_obs(q) * (1 - p_obs(q)))
    assert sr.noisy_information(q, eps) == pytest.approx(expected, rel=1e-6)
    # without flips the information of a near-zero distance grows without bound; with flips it
    # tends to (p'(0)(1 - 2e))² / (e(1 - e)) = (0.5 · 0.8)² / 0.09
    assert sr.noisy_information(np.array([1e-8]), 0.0)[0] > 1e6
    assert sr.noisy_information(np.array([1e-12]), 0.1)[0] == pytest.approx(0.16 / 0.09, rel=1e-6)


def test_vech_features_give_the_quadratic_form():
    rng = np.random.default_rng(0)
    z, a = rng.normal(size=(5, 4)), rng.normal(size=(4, 4))
    delta = a + a.T
    i, j = np.triu_indices(4)
    vech_delta = delta[i, j] * np.where(i == j, 1.0, np.sqrt(2.0))
    assert sr.vech(z) @ vech_delta == pytest.approx(np.einsum("ij,jk,ik->i", z, delta, z))


def test_the_design_picks_the_best_candidate_and_keeps_its_scores_exact():
    """After each greedy pick, the rank-one updated M⁻¹, B = M⁻¹GM⁻¹ and the candidates' scores
    equal a direct recomputation with the picked candidate's information added to M."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 4))
    answered = x[rng.integers(40, size=30)] - x[rng.integers(40, size=30)]
    y = (rng.random(30) < 0.5).astype(float)
    sigma = np.diag([1.0, 0.5, 0.1, 0.02])
    design = sr.VOptimalDesign(x, sigma, 0.3, 0.4, answered, y, 0.1, rng)
    m = np.linalg.inv(design.minv)
    gram = m @ design.b @ m
    for _ in range(3):
        gain = design.hc * design.reduce / (1 + design.hc * design.var)
        gain[~design.alive] = -np.inf
        best = int(np.argmax(gain))
        picked = design.pick()
        assert picked == (int(design.ci[best]), int(design.cj[best]))
        u, h = design.uc[best], design.hc[best]
        m = m + h * np.outer(u, u)
        minv = np.linalg.inv(m)
        b = minv @ gram @ minv
        np.testing.assert_allclose(design.minv, minv, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(design.b, b, rtol=1e-6, atol=1e-9)
        uc = design.uc
        np.testing.assert_allclose(design.var, np.einsum("ij,jk,ik->i", uc, minv, uc), rtol=1e-6)
        np.testing.assert_allclose(design.reduce, np.einsum("ij,jk,ik->i", uc, b, uc), rtol=1e-6)
    assert (~design.alive).sum() == 3


@pytest.mark.slow
def test_the_replica_runs_in_its_quick_form():
    result = run_benchmark("strategy_replica.py", "--quick", "--processes", "1", timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "| random |" in out
    assert "| targeted |" in out
    assert "| 320 |" in out  # the curve reaches the quick budget


def test_an_unknown_rule_is_one_line_and_exit_2():
    result = run_benchmark("strategy_replica.py", "--strategies", "random,psychic", timeout=120)
    assert result.returncode == 2
    assert "unknown rule(s) psychic" in result.stderr.strip().splitlines()[-1]
