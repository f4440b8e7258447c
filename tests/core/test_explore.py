"""EXPLORE: likelihood derivatives, stable numerics, recovery, optimality, constraints, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit

from learning.core._pairloss import (
    D_FLOOR,
    PairBlocks,
    curvature,
    log_tanh_half,
    log_two_sigmoid_neg,
    pair_loglik,
    quad_forms,
    weighted_gram,
)
from learning.core.explore import EXPLORE


def _response_data(n, sigma0, scale, seed):
    """y ~ Bernoulli(2σ(-zᵀΣ₀z)) with z ~ N(0, scale² I)."""
    rng = np.random.default_rng(seed)
    z = scale * rng.standard_normal((n, sigma0.shape[0]))
    d = np.einsum("ij,jk,ik->i", z, sigma0, z)
    y = (rng.uniform(size=n) < 2.0 * expit(-d)).astype(float)
    return z, y


def _paper_like(n, d, seed, k=2, r=3):
    """Comparable pairs differ mostly in a k-dim sensitive subspace (large, ignored by Σ₀)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, k + r)))
    u, rel = q[:, :k], q[:, k:]
    sigma0 = (np.eye(d) - u @ u.T) + 4.0 * rel @ rel.T + 0.01 * u @ u.T
    s = rng.uniform(0.0, 2.0, size=n)
    z = (rng.standard_normal((n, k)) * 2.0) @ u.T
    z += (s / np.sqrt(d))[:, None] * rng.standard_normal((n, d))
    dist = np.einsum("ij,jk,ik->i", z, sigma0, z)
    y = (rng.uniform(size=n) < 2.0 * expit(-dist)).astype(float)
    return z, y, u


SIGMA0 = np.diag([0.05, 0.3, 1.0, 1.5])


def _objective_and_gradient(z, y, sigma):
    d = quad_forms(z, sigma)
    _, g1 = log_two_sigmoid_neg(d)
    _, g0 = log_tanh_half(d)
    slope = y * g1 + (1.0 - y) * g0
    return float(np.mean(pair_loglik(d, y))), weighted_gram(z, slope) / z.shape[0]


def test_gradient_matches_finite_differences_on_symmetric_perturbations():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((300, 5))
    y = rng.choice([0.0, 1.0, 0.5], size=300)
    g = rng.standard_normal((5, 5))
    sigma = g @ g.T / 5 + 0.1 * np.eye(5)
    _, grad = _objective_and_gradient(z, y, sigma)
    h = 1e-6
    for _ in range(5):
        e = rng.standard_normal((5, 5))
        e = (e + e.T) / 2
        f_plus, _ = _objective_and_gradient(z, y, sigma + h * e)
        f_minus, _ = _objective_and_gradient(z, y, sigma - h * e)
        assert_allclose((f_plus - f_minus) / (2 * h), np.sum(grad * e), rtol=1e-6)


def test_block_bookkeeping_matches_direct_loglik_and_slope():
    rng = np.random.default_rng(1)
    y = rng.choice([0.0, 1.0, 0.25], size=200)
    d = rng.exponential(size=200)
    order = PairBlocks.order(y)
    blocks = PairBlocks.from_sorted(y[order])
    ll, slope = blocks.loglik_and_slope(d[order])
    assert_allclose(ll, np.mean(pair_loglik(d, y)), rtol=1e-13)
    _, g1 = log_two_sigmoid_neg(d)
    _, g0 = log_tanh_half(d)
    assert_allclose(slope, (y * g1 + (1 - y) * g0)[order], rtol=1e-13)


def test_curvature_is_minus_the_derivative_of_the_slope():
    d = np.array([1e-3, 0.1, 1.0, 5.0])
    h = 1e-7
    for y in (0.0, 1.0):
        yy = np.full_like(d, y)

        def slope(x, yy=yy):
            return yy * log_two_sigmoid_neg(x)[1] + (1 - yy) * log_tanh_half(x)[1]

        assert_allclose(curvature(d, yy), -(slope(d + h) - slope(d - h)) / (2 * h), rtol=1e-5)


def test_stable_numerics_for_tiny_and_huge_distances():
    d = np.array([0.0, 1e-300, 1e-12, 1e-9, 1e-6, 1e-3, 1.0, 30.0, 700.0, 1e5, 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        val0, der0 = log_tanh_half(d)
        val1, der1 = log_two_sigmoid_neg(d)
    assert np.all(np.isfinite(val0))
    assert np.all(np.isfinite(der0))
    assert np.all(np.isfinite(val1))
    assert np.all(np.isfinite(der1))
    small = (d >= D_FLOOR) & (d <= 1e-3)
    x = d[small] / 2  # log tanh x = log x - x²/3 + 7x⁴/90 - …
    assert_allclose(val0[small], np.log(x) - x**2 / 3 + 7 * x**4 / 90, rtol=1e-14)
    assert_allclose(der0[small], 1 / np.sinh(d[small]), rtol=1e-12)
    mid = d == 1.0
    assert_allclose(val0[mid], np.log(np.tanh(0.5)), rtol=1e-14)
    assert_allclose(val1[mid], np.log(2 * expit(-1.0)), rtol=1e-14)
    assert_allclose(val0[d == 30.0], -2 * np.exp(-30.0), rtol=1e-9)
    assert_allclose(val1[d == 1e5], np.log(2) - 1e5, rtol=1e-15)
    below = d < D_FLOOR  # tangent continuation: finite, increasing, concave
    assert np.all(np.diff(val0[below]) >= 0)
    assert np.all(val0[below] <= val0[d == 1e-6])


def test_identical_pairs_and_huge_distances_fit_without_inf_or_nan():
    z, y = _response_data(2000, SIGMA0, 0.6, seed=2)
    z[:20] = 0.0  # identical pairs, both labels
    y[:10], y[10:20] = 0.0, 1.0
    z[20:25] *= 1e3  # huge distances
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = EXPLORE().fit_differences(z, y)
        proba = m.predict_proba(z[:30], np.zeros((30, 4)))
    assert np.isfinite(m.loglik_)
    assert m.converged_
    assert np.all(np.isfinite(m.sigma_))
    assert np.all((proba >= 0) & (proba <= 1))


def test_recovers_sigma0_and_error_shrinks_with_n():
    errors = []
    for n in (2000, 40000):
        z, y = _response_data(n, SIGMA0, 0.6, seed=3)
        m = EXPLORE().fit_differences(z, y)
        errors.append(np.linalg.norm(m.sigma_ - SIGMA0) / np.linalg.norm(SIGMA0))
    assert errors[1] < 0.15
    assert errors[1] < errors[0] / 2


def test_output_psd_deterministic_and_consistent_methods():
    z, y = _response_data(3000, SIGMA0, 0.6, seed=4)
    rng = np.random.default_rng(0)
    x2 = rng.standard_normal(z.shape)
    x1 = x2 + z
    a = EXPLORE(random_state=0).fit(x1, x2, y)
    b = EXPLORE(random_state=0).fit(x1, x2, y)
    assert np.array_equal(a.sigma_, b.sigma_)
    assert_allclose(a.sigma_, a.sigma_.T)
    assert np.linalg.eigvalsh(a.sigma_)[0] >= -1e-12
    d = np.einsum("ij,jk,ik->i", z, a.sigma_, z)
    assert_allclose(a.distance(x1, x2), d, rtol=1e-10, atol=1e-12)
    assert_allclose(a.predict_proba(x1, x2), 2 * expit(-d), rtol=1e-10)
    assert_allclose(a.score(x1, x2, y), a.loglik_, rtol=1e-10)
    assert_allclose(a.loglik_, np.mean(pair_loglik(d, y)), rtol=1e-10)


def _reference(z, y, **kw):
    kw.setdefault("alpha", 0.0)
    return EXPLORE(precision="double", tol=1e-13, max_iter=20000, **kw).fit_differences(z, y)


def test_default_solver_within_1e4_of_a_long_high_accuracy_run_on_paper_like_data():
    z, y, _ = _paper_like(20000, 20, seed=5)
    default = EXPLORE(alpha=0.0).fit_differences(z, y)
    ref = _reference(z, y)
    assert default.converged_
    assert ref.converged_
    assert ref.loglik_ - default.loglik_ < 1e-4
    assert default.loglik_ - ref.loglik_ < 1e-6  # the reference really is the optimum


def test_random_starts_reach_the_same_optimum():
    z, y, _ = _paper_like(5000, 8, seed=6)
    lls = [
        EXPLORE(init="random", random_state=s, alpha=0.0).fit_differences(z, y).loglik_
        for s in (1, 2)
    ]
    lls.append(EXPLORE(alpha=0.0).fit_differences(z, y).loglik_)
    assert max(lls) - min(lls) < 1e-5


def test_bounded_spectrum_holds_and_is_optimal_under_the_bound():
    z, y = _response_data(5000, SIGMA0, 0.6, seed=7)
    m = EXPLORE(max_eigenvalue=0.5, alpha=0.0).fit_differences(z, y)
    top = np.linalg.eigvalsh(m.sigma_)[-1]
    assert top <= 0.5 * (1 + 1e-9)
    assert top > 0.45  # the bound binds (Σ₀ has eigenvalues 1 and 1.5)
    ref = _reference(z, y, max_eigenvalue=0.5)
    assert abs(ref.loglik_ - m.loglik_) < 1e-5


def test_sensitive_direction_projection_annihilates_the_direction():
    z, y, u = _paper_like(3000, 6, seed=9)
    direction = np.array([[1.0, 2.0, 0.0, 0.0, -1.0, 0.5]])
    m = EXPLORE(sensitive_directions=direction).fit_differences(z, y)
    assert_allclose(m.sigma_ @ direction.T, 0.0, atol=1e-12)
    assert np.linalg.eigvalsh(m.sigma_)[0] >= -1e-12


def test_soft_labels_equal_duplicated_hard_labels():
    z, _ = _response_data(1500, SIGMA0, 0.6, seed=10)
    y = np.full(1500, 0.5)
    y[:500], y[500:1000] = 1.0, 0.0
    soft = _reference(z, y)
    zz = np.vstack([z, z[1000:]])
    yy = np.r_[y[:1000], np.ones(500), np.zeros(500)]
    w = np.r_[np.ones(1000), 0.5 * np.ones(1000)]  # duplicated rows carry half weight each …
    hard = _reference(zz, yy)
    # … so compare objectives through the weighted mean log-likelihood at each optimum
    d_soft = np.einsum("ij,jk,ik->i", zz, soft.sigma_, zz)
    d_hard = np.einsum("ij,jk,ik->i", zz, hard.sigma_, zz)
    ll_soft = np.sum(w * pair_loglik(d_soft, yy)) / 1500
    ll_hard = np.sum(w * pair_loglik(d_hard, yy)) / 1500
    assert_allclose(ll_soft, soft.loglik_, rtol=1e-10)
    assert ll_soft >= ll_hard - 1e-9  # the soft fit optimises exactly that objective


@pytest.mark.parametrize(
    ("z", "y", "message"),
    [
        (np.zeros((0, 3)), np.zeros(0), "empty"),
        (np.ones((4, 3)), np.ones(4), "one class"),
        (np.ones((4, 3)), np.zeros(4), "one class"),
        (np.ones((4, 3)), np.array([0, 1, 1]), "length 4"),
        (np.array([[1.0, np.nan], [1.0, 2.0]]), np.array([0, 1]), "NaN"),
        (np.array([[1.0, np.inf], [1.0, 2.0]]), np.array([0, 1]), "NaN or inf"),
        (np.ones((2, 2)), np.array([0, 2]), r"\[0, 1\]"),
        (np.zeros((2, 2)), np.array([0, 1]), "all difference vectors are zero"),
    ],
)
def test_bad_input_raises_value_error(z, y, message):
    with pytest.raises(ValueError, match=message):
        EXPLORE().fit_differences(z, y)


def test_mismatched_pairs_and_bad_parameters_raise():
    with pytest.raises(ValueError, match="same shape"):
        EXPLORE().fit(np.ones((3, 2)), np.ones((3, 3)), np.array([0, 1, 1]))
    z, y = _response_data(50, SIGMA0, 0.6, seed=0)
    for bad in ({"max_eigenvalue": -1.0}, {"tol": 0}, {"max_iter": 0}, {"precision": "half"}):
        with pytest.raises(ValueError):
            EXPLORE(**bad).fit_differences(z, y)
    with pytest.raises(ValueError, match="not fitted"):
        EXPLORE().score(z, z, y)


def test_integer_weights_equal_repeated_pairs_and_zero_weights_equal_dropped_pairs():
    rng = np.random.default_rng(21)
    z, y = _response_data(3000, SIGMA0, 0.6, seed=21)
    w = rng.integers(0, 4, size=3000).astype(float)  # 0 to 3 copies of each pair
    rep = np.repeat(np.arange(3000), w.astype(int))
    for alpha in (0.0, 0.5):  # a fixed prior scale: its 1-D search is only accurate to ~0.3 %
        kw = {"alpha": alpha, "tol": 1e-10, "max_iter": 3000, "prior_scale": 0.6}
        kw["precision"] = "double"
        weighted = EXPLORE(**kw).fit_differences(z, y, sample_weight=w)
        repeated = EXPLORE(**kw).fit_differences(z[rep], y[rep])
        assert_allclose(weighted.loglik_, repeated.loglik_, rtol=1e-6)
        assert_allclose(weighted.sigma_, repeated.sigma_, rtol=2e-3, atol=2e-3)
    keep = w > 0
    weighted = EXPLORE(**kw).fit_differences(z, y, sample_weight=keep.astype(float))
    dropped = EXPLORE(**kw).fit_differences(z[keep], y[keep])
    assert_allclose(weighted.sigma_, dropped.sigma_, rtol=2e-3, atol=2e-3)
    # weights reach the held-out figures: the validation pairs' weighted mean
    m = EXPLORE(alpha=0.5).fit_differences(
        z, y, sample_weight=w, validation=np.arange(3000) % 5 == 0
    )
    held = np.arange(3000) % 5 == 0
    expected = np.average(pair_loglik(m.heldout_distances_[held], y[held]), weights=w[held])
    assert np.isclose(m.heldout_loglik_, expected)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (np.ones(5), "length"),
        (-np.ones(300), "≥ 0"),
        (np.zeros(300), "at least one weight"),
        (np.r_[np.nan, np.ones(299)], "finite"),
    ],
)
def test_bad_sample_weights_raise(weights, message):
    z, y = _response_data(300, SIGMA0, 0.6, seed=22)
    with pytest.raises(ValueError, match=message):
        EXPLORE().fit_differences(z, y, sample_weight=weights)
