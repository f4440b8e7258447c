"""EXPLORE on hard data: rank-deficient differences, null directions, anisotropy, separation,
few answers, the shortfall rule, penalised fits beating the MLE held out; drift stability."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from learning.core._explore_path import stratified_folds
from learning.core._explore_problem import Problem
from learning.core._pairloss import pair_loglik, quad_forms
from learning.core.drift import drift
from learning.core.explore import EXPLORE, explore_shortfall


def _labels(z, sigma0, rng):
    return (rng.uniform(size=z.shape[0]) < 2.0 * expit(-quad_forms(z, sigma0))).astype(float)


def test_fewer_pairs_than_dimensions_fits_finite_and_psd():
    rng = np.random.default_rng(0)
    d = 200
    sigma0 = np.eye(d) * 0.5
    z = 0.1 * rng.standard_normal((55, d))
    y = _labels(z, sigma0, rng)
    m = EXPLORE().fit_differences(z, y)
    assert np.all(np.isfinite(m.sigma_))
    assert np.linalg.eigvalsh(m.sigma_)[0] >= -1e-10
    assert m.n_constrained_ == 55
    assert np.isfinite(m.heldout_loglik_)
    lo, hi = m.heldout_loglik_ci_
    assert lo <= m.heldout_loglik_ <= hi


def test_rank_deficient_differences_and_constant_coordinate_converge():
    rng = np.random.default_rng(1)
    d, r = 50, 49
    basis = np.linalg.qr(rng.standard_normal((d, r)))[0]
    sigma0 = basis @ np.diag(rng.uniform(0.5, 2.0, r)) @ basis.T
    z = (0.2 * rng.standard_normal((20000, r))) @ basis.T
    z[:, 7] = 0.0  # a coordinate that never varies (after the subspace projection)
    y = _labels(z, sigma0, rng)
    m = EXPLORE(alpha=0.0).fit_differences(z, y)
    ref = EXPLORE(alpha=0.0, precision="double", tol=1e-12, max_iter=5000).fit_differences(z, y)
    assert m.converged_
    assert m.n_constrained_ == 49  # zeroing x_7 maps the 49-d span onto another 49-d one
    assert ref.loglik_ - m.loglik_ < 1e-4


def test_null_directions_get_the_prior_not_a_cap():
    rng = np.random.default_rng(2)
    d = 20
    sigma0 = np.diag(np.linspace(0.5, 1.5, d))
    z = 0.4 * rng.standard_normal((3000, d))
    z[:, -1] = 0.0  # direction e_20 is never explored
    y = _labels(z, sigma0, rng)
    m = EXPLORE().fit_differences(z, y)
    e = np.eye(d)[-1]
    assert m.n_constrained_ == d - 1
    assert np.isclose(e @ m.sigma_ @ e, m.prior_scale_, rtol=1e-9)  # the stated prior scale …
    assert np.allclose(m.sigma_[-1, :-1], 0.0, atol=1e-10)
    seen = np.diag(m.sigma_)[:-1]
    assert m.prior_scale_ < 3 * seen.max()  # … of the order of the explored eigenvalues
    assert any("span 19 of 20" in w for w in m.warnings_)
    prior = np.diag(np.r_[np.ones(d - 1), 0.0])  # a caller's prior that ignores e_20
    m2 = EXPLORE(prior=prior).fit_differences(z, y)
    assert abs(e @ m2.sigma_ @ e) < 1e-12


def test_anisotropic_truth_recovered_without_cap_bias():
    # The unpenalised fit: no cap any more, so the error shrinks like 1/√n (the old default cap
    # 100·d/mean‖z‖² = 111 held this eigenvalue of 400 at a relative error of 0.72).
    rng = np.random.default_rng(3)
    spread = np.r_[0.05, np.ones(9)]
    sigma0 = np.diag(np.r_[400.0, np.full(9, 0.6)])
    errors = []
    for n in (2000, 8000, 32000):
        z = spread * rng.standard_normal((n, 10))
        y = _labels(z, sigma0, rng)
        m = EXPLORE(alpha=0.0).fit_differences(z, y)
        errors.append(abs(m.sigma_[0, 0] - 400.0) / 400.0)
        assert not m.bound_active_
    assert errors[-1] < 0.05
    assert errors[2] < errors[1] < errors[0]
    default = EXPLORE().fit_differences(z, y)  # the penalised default, n = 32000: no bias either
    assert abs(default.sigma_[0, 0] - 400.0) / 400.0 < 0.05
    assert not default.bound_active_


def test_separable_data_give_a_finite_answer_and_say_so():
    rng = np.random.default_rng(8)
    z = rng.standard_normal((4000, 3))
    y = np.ones(4000)
    z[:2000, 2] = 0.0  # comparable pairs never differ along e3 …
    y[2000:] = 0.0
    z[2000:, 2] = np.sign(z[2000:, 2]) * (1.0 + np.abs(z[2000:, 2]))  # … incomparable ones do
    m = EXPLORE().fit_differences(z, y)
    assert np.all(np.isfinite(m.sigma_))
    assert m.bound_active_
    assert any("separate" in w for w in m.warnings_)


def test_twenty_answers_give_a_finite_fit_and_fewer_raise():
    rng = np.random.default_rng(4)
    z = 0.5 * rng.standard_normal((20, 50))
    y = np.r_[np.ones(8), np.zeros(12)]
    m = EXPLORE().fit_differences(z, y)
    assert np.all(np.isfinite(m.sigma_))
    assert np.isfinite(m.heldout_loglik_)
    with pytest.raises(ValueError, match="at least 20 answers"):
        EXPLORE().fit_differences(z[:19], y[:19])


def test_shortfall_function():
    assert explore_shortfall(np.ones(5)).need_incomparable == 1
    s = explore_shortfall(np.r_[np.ones(5), np.zeros(3)])
    assert (s.need_comparable, s.need_incomparable, s.need_any) == (0, 0, 12)
    assert not s.ok
    assert explore_shortfall(np.r_[np.ones(10), np.zeros(10)]).ok
    assert explore_shortfall(np.full(25, 0.5)).need_comparable == 1


def _low_rank_case(seed):
    """Issue 13's case 4 at a small size: d=60, 8k pairs, a rank-30 truth; and a yardstick, the
    log-likelihood of 40k fresh pairs drawn from Σ₀."""
    rng = np.random.default_rng(seed)
    d, rank = 60, 30
    g = rng.standard_normal((d, rank))
    sigma0 = 1.36 * g @ g.T / d
    z = 0.11 * rng.standard_normal((8000, d))
    y = _labels(z, sigma0, rng)
    zt = 0.11 * rng.standard_normal((40000, d))
    yt = _labels(zt, sigma0, rng)

    def fresh(s):
        return float(np.mean(pair_loglik(quad_forms(zt, s), yt)))

    return sigma0, z, y, fresh


def test_penalised_fit_beats_the_mle_held_out_on_a_low_rank_truth():
    sigma0, z, y, heldout = _low_rank_case(5)
    mle = EXPLORE(alpha=0.0).fit_differences(z, y)
    pen = EXPLORE().fit_differences(z, y)
    assert pen.alpha_ > 0
    assert len(pen.alpha_path_) >= 2
    assert heldout(pen.sigma_) > heldout(mle.sigma_) + 0.002
    assert heldout(pen.sigma_) > heldout(sigma0) - 0.02


def test_drift_between_two_independent_fits_of_one_truth_is_small():
    rng = np.random.default_rng(6)
    d = 8
    u = np.linalg.qr(rng.standard_normal((d, 2)))[0]
    sigma0 = np.eye(d) - u @ u.T + 0.01 * u @ u.T  # two ignored (sensitive) directions
    fits = []
    for _ in range(2):
        z = 0.6 * rng.standard_normal((20000, d))
        fits.append(EXPLORE().fit_differences(z, _labels(z, sigma0, rng)).sigma_)
    r = drift(fits[0], fits[1])
    assert r.sensitive_dims == (2, 2)
    assert r.dim_rules == ("gap", "gap")
    assert r.subspace_distance < 0.2
    assert drift(fits[0], fits[1], sensitive_dim=2).dim_rules == ("given", "given")


def test_heldout_interval_for_a_fixed_alpha_on_request_and_covers_fresh_pairs():
    rng = np.random.default_rng(7)
    sigma0 = np.diag([0.2, 0.5, 1.0, 2.0])
    z = 0.6 * rng.standard_normal((4000, 4))
    y = _labels(z, sigma0, rng)
    zt = 0.6 * rng.standard_normal((50000, 4))
    yt = _labels(zt, sigma0, rng)
    plain = EXPLORE(alpha=0.0).fit_differences(z, y)
    assert np.isnan(plain.heldout_loglik_)
    m = EXPLORE(alpha=0.0, validate=True).fit_differences(z, y)
    lo, hi = m.heldout_loglik_ci_
    assert m.heldout_n_ == 4000  # five folds (4,000 pairs × d = 4 is small): each held out once
    fresh = float(np.mean(pair_loglik(quad_forms(zt, m.sigma_), yt)))
    assert lo - 0.01 <= fresh <= hi + 0.01  # the interval is about the fit's generalisation
    assert hi - lo < 0.1


def test_caller_folds_give_the_heldout_figures_and_bad_folds_raise():
    rng = np.random.default_rng(9)
    sigma0 = np.diag([0.2, 0.5, 1.0, 2.0])
    z = 0.6 * rng.standard_normal((3000, 4))
    y = _labels(z, sigma0, rng)
    mask = np.zeros(3000, dtype=bool)
    mask[::4] = True  # one split: every fourth pair held out
    m = EXPLORE().fit_differences(z, y, validation=mask)
    d = m.heldout_distances_
    assert np.all(np.isfinite(d[mask]))
    assert np.all(np.isnan(d[~mask]))
    assert m.heldout_n_ == mask.sum()
    assert np.isclose(m.heldout_loglik_, np.mean(pair_loglik(d[mask], y[mask])))
    # the held-out distances come from a fit that did not see those pairs: a fit on the
    # training side at the chosen penalty scores them about the same
    side = EXPLORE(alpha=m.alpha_).fit_differences(z[~mask], y[~mask])
    independent = np.mean(pair_loglik(quad_forms(z[mask], side.sigma_), y[mask]))
    assert abs(independent - m.heldout_loglik_) < 2e-3
    folds = np.arange(3000) % 3  # three caller folds: every pair held out once
    k = EXPLORE().fit_differences(z, y, validation=folds)
    assert k.heldout_n_ == 3000
    assert np.all(np.isfinite(k.heldout_distances_))
    with pytest.raises(ValueError, match="boolean mask or an integer fold"):
        EXPLORE().fit_differences(z, y, validation=np.ones(10, dtype=bool))
    with pytest.raises(ValueError, match="holds out no pair"):
        EXPLORE().fit_differences(z, y, validation=np.zeros(3000, dtype=bool))
    with pytest.raises(ValueError, match="too few"):
        EXPLORE().fit_differences(z, y, validation=y < 0.5)  # training side: one label only


def test_one_split_penalty_is_as_good_as_the_best_of_a_grid_judged_by_the_truth():
    # One validation split (≥ 2,000 pairs): the penalty chosen on the rays through fold fits
    # (module docstring) against fixed penalties alpha_·10^k, all judged by fresh pairs from Σ₀.
    sigma0, z, y, fresh = _low_rank_case(12)
    chosen = EXPLORE().fit_differences(z, y)
    assert len(chosen.alpha_path_) >= 2  # a fold fit and the ray's choice
    grid = [
        fresh(EXPLORE(alpha=chosen.alpha_ * 10.0**k).fit_differences(z, y).sigma_)
        for k in range(-3, 3)
    ]
    mle = fresh(EXPLORE(alpha=0.0).fit_differences(z, y).sigma_)
    assert fresh(chosen.sigma_) > max(grid) - 0.002
    assert fresh(chosen.sigma_) > mle + 0.005
    assert fresh(chosen.sigma_) > fresh(sigma0) - 0.015


@pytest.mark.parametrize("weighted", [False, True])
def test_training_part_built_from_the_full_problem_equals_one_built_from_scratch(weighted):
    # the one-split search takes the training part's rows, prior distances and penalty metric
    # from the problem on all pairs (held-out rows subtracted, capped curvatures corrected):
    # the numbers must be those of a problem built directly on the training rows

    rng = np.random.default_rng(3)
    n, d = 3000, 12
    z = rng.standard_normal((n, d)) * rng.uniform(0.2, 1.5, d)
    y = (rng.uniform(size=n) < 2.0 * expit(-0.5 * np.sum(z * z, 1) / d)).astype(float)
    w = rng.integers(0, 4, n).astype(float) if weighted else None
    w = None if w is None else w * (n / w.sum())
    prior = 0.3 * np.eye(d)
    second = z.T @ z / n
    sq = np.sum(z * z, 1)
    full = Problem(z, y, prior, second, "mixed", weights=w, sq=sq)
    ((tr, va),) = stratified_folds(y, kfold=False)
    c_tr = (n * second - z[va].T @ z[va]) / tr.size
    direct = Problem(z, y, prior, c_tr, "mixed", rows=tr, weights=w)
    derived = Problem(z, y, prior, c_tr, "mixed", rows=tr, weights=w, parent=full)
    assert derived.u is None
    assert direct.u is None
    np.testing.assert_array_equal(derived.rows, direct.rows)
    np.testing.assert_array_equal(derived.zw, direct.zw)
    np.testing.assert_allclose(derived.d_prior, direct.d_prior, rtol=1e-6)
    # W is summed in float32 (mixed precision): equal to 1e-6 of its largest entry (the order
    # of the sums differs with BLAS threads; 1e-9 absolute failed on small entries in CI)
    scale = float(np.abs(direct.weight).max())
    np.testing.assert_allclose(derived.weight, direct.weight, rtol=1e-6, atol=1e-6 * scale)
    np.testing.assert_allclose(full.d_prior, quad_forms(z[full.rows], prior), rtol=1e-6)
