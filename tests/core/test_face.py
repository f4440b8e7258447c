"""FACE: recovery under the factor model, the pairs/differences identity, exact accumulation."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.linalg import subspace_angles

import learning.core.face as face_module
from learning.core._validation import as_groups
from learning.core.face import FACE, auto_n_components


def _factor_groups(n, d=20, k=2, n_rel=4, group_size=5, within_rel=0.0, seed=0):
    """φ = A*u + B v + ε: items of a group share v (up to ``within_rel``) and differ in u."""
    rng = np.random.default_rng(seed)
    a_star = rng.standard_normal((d, k)) * 2.0
    b = rng.standard_normal((d, n_rel))
    n_groups = n // group_size
    u = rng.standard_normal((n, k))
    v = np.repeat(rng.standard_normal((n_groups, n_rel)) * 3.0, group_size, axis=0)
    v = v + within_rel * rng.standard_normal(v.shape)
    x = u @ a_star.T + v @ b.T + 0.3 * rng.standard_normal((n, d))
    groups = [np.arange(g * group_size, (g + 1) * group_size) for g in range(n_groups)]
    return x, groups, a_star


def _largest_angle(model, a_star):
    return float(np.max(subspace_angles(model.components_.T, a_star)))


def test_recovers_sensitive_subspace_and_error_shrinks_with_n():
    errors = []
    for n in (250, 4000):
        x, groups, a_star = _factor_groups(n, seed=1)
        errors.append(_largest_angle(FACE(n_components=2).fit(x, groups), a_star))
    assert errors[1] < 0.1
    assert errors[1] < errors[0] / 2  # Theorem 2: the error decays like n^{-1/2}


def test_sigma_is_the_projector_onto_the_complement():
    x, groups, _ = _factor_groups(500, seed=2)
    m = FACE(n_components=2).fit(x, groups)
    assert_allclose(m.sigma_ @ m.sigma_, m.sigma_, atol=1e-12)
    assert_allclose(np.trace(m.sigma_), x.shape[1] - 2)
    assert_allclose(m.components_ @ m.components_.T, np.eye(2), atol=1e-12)
    assert_allclose(m.sigma_ @ m.components_.T, 0.0, atol=1e-12)


def test_pair_groups_equal_svd_of_pairwise_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60, 8))
    pairs = rng.choice(60, size=(40, 2), replace=True)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    m = FACE(n_components=3).fit(x, list(pairs))
    diff = x[pairs[:, 0]] - x[pairs[:, 1]]
    _, s, vt = np.linalg.svd(diff, full_matrices=False)
    # centred pair rows are ±(φ1 - φ2)/2, so the stack's singular values are s/√2
    assert_allclose(m.singular_values_, s[:3] / np.sqrt(2.0), rtol=1e-10)
    assert_allclose(m.components_.T @ m.components_, vt[:3].T @ vt[:3], atol=1e-10)
    assert_allclose(FACE(n_components=3).fit(x, pairs).sigma_, m.sigma_)  # (G, 2) array form


def test_fit_scatter_of_summed_parts_equals_fit_on_the_groups():
    """The scatter of a union of groups is the sum of theirs; a pair's is zzᵀ/2."""
    x, groups, _ = _factor_groups(400, seed=5)
    rng = np.random.default_rng(5)
    pairs = rng.choice(400, size=(90, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    whole = FACE(n_components="auto").fit(x, [*groups, *pairs])
    rows, sizes = as_groups(groups, x.shape[0])
    z = x[pairs[:, 0]] - x[pairs[:, 1]]
    summed = face_module.within_group_scatter(x, rows, sizes) + z.T @ z / 2.0
    model = FACE(n_components="auto").fit_scatter(
        summed, n_groups=len(groups) + len(pairs), n_rows=int(sizes.sum()) + 2 * len(pairs)
    )
    assert model.n_components_ == whole.n_components_
    assert_allclose(model.sigma_, whole.sigma_, atol=1e-10)
    assert_allclose(model.spectrum_, whole.spectrum_, rtol=1e-10, atol=1e-9)
    assert (model.n_groups_, model.n_rows_) == (whole.n_groups_, whole.n_rows_)
    with pytest.raises(ValueError, match="square"):
        FACE().fit_scatter(np.ones((3, 2)), n_groups=1, n_rows=2)
    with pytest.raises(ValueError, match="removes every direction"):
        FACE(n_components=3).fit_scatter(np.eye(3), n_groups=1, n_rows=2)


@pytest.mark.parametrize("chunk", [7, 65536])
def test_scatter_accumulation_equals_explicit_stack_svd(monkeypatch, chunk):
    monkeypatch.setattr(face_module, "_CHUNK_ROWS", chunk)  # groups straddle chunk borders
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 6)) + 5.0
    sizes = [2, 3, 7, 2, 11, 4]
    groups = [rng.choice(50, size=s, replace=False) for s in sizes]  # rows may repeat across
    groups.append(np.arange(10, 19))  # a contiguous group (slice path)
    stack = np.vstack([x[g] - x[g].mean(axis=0) for g in groups])
    _, s, vt = np.linalg.svd(stack, full_matrices=False)
    m = FACE(n_components=2).fit(x, groups)
    assert_allclose(m.singular_values_, s[:2], rtol=1e-10)
    assert_allclose(m.spectrum_, s**2, rtol=1e-9, atol=1e-9)
    assert_allclose(np.abs(m.components_), np.abs(vt[:2]), atol=1e-9)
    assert_allclose(m.explained_variance_ratio_, s[:2] ** 2 / np.sum(s**2), rtol=1e-10)


def test_label_array_form_equals_list_form():
    x, groups, _ = _factor_groups(300, seed=5)
    labels = np.full(x.shape[0] + 3, -1)
    x = np.vstack([x, np.ones((3, x.shape[1]))])
    for g, idx in enumerate(groups):
        labels[idx] = g
    perm = np.random.default_rng(0).permutation(len(groups))  # label values in any order
    labels = np.where(labels >= 0, perm[np.maximum(labels, 0)], -1)
    a = FACE(n_components=2).fit(x, groups)
    b = FACE(n_components=2).fit(x, labels)
    assert_allclose(b.components_, a.components_, atol=1e-12)
    assert_allclose(b.singular_values_, a.singular_values_, rtol=1e-12)


def test_deterministic_signs_and_group_order_invariance():
    x, groups, _ = _factor_groups(400, seed=6)
    a = FACE(n_components=2).fit(x, groups)
    b = FACE(n_components=2).fit(x, groups[::-1])
    assert_allclose(b.components_, a.components_, atol=1e-10)
    top = np.argmax(np.abs(a.components_), axis=1)
    assert np.all(a.components_[np.arange(2), top] > 0)


def test_auto_recovers_k_on_a_clear_spectrum():
    x, groups, _ = _factor_groups(2000, k=3, seed=7)
    m = FACE(n_components="auto").fit(x, groups)
    assert m.n_components_ == 3
    assert m.components_.shape == (3, 20)
    assert auto_n_components([10.0, 9.0, 1.0, 0.9, 0.0, 0.0]) == 2  # zero tail is ignored
    assert auto_n_components([1.0]) == 1


def test_heterogeneity_rises_with_relevant_variation_inside_groups():
    x0, g0, _ = _factor_groups(1000, seed=8, within_rel=0.0)
    x1, g1, _ = _factor_groups(1000, seed=8, within_rel=1.5)
    h0 = FACE(n_components=2).fit(x0, g0).heterogeneity_
    h1 = FACE(n_components=2).fit(x1, g1).heterogeneity_
    assert 0.0 <= h0 < h1 <= 1.0
    assert h1 > h0 + 0.2


@pytest.mark.parametrize(
    ("groups", "k", "message"),
    [
        ([np.array([1, 2]), np.array([3])], 1, "at least 2"),
        ([np.array([0, 10])], 1, r"\[0, 10\)"),
        ([np.array([-1, 2])], 1, r"\[0, 10\)"),
        ([np.array([1, 1, 2])], 1, "same row twice"),
        ([], 1, "empty"),
        ([np.array([0, 1])], 4, "1 ≤ k ≤ d"),
        ([np.array([0, 1])], 0, "1 ≤ k ≤ d"),
        ([np.array([0.0, 1.0])], 1, "integer"),
    ],
)
def test_bad_input_raises_value_error(groups, k, message):
    x = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match=message):
        FACE(n_components=k).fit(x, groups)


def test_nan_and_empty_x_raise():
    x = np.ones((4, 3))
    x[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        FACE().fit(x, [np.array([0, 1])])
    with pytest.raises(ValueError, match="empty"):
        FACE().fit(np.zeros((0, 3)), [np.array([0, 1])])
    with pytest.raises(ValueError, match="constant"):
        FACE().fit(np.ones((4, 3)), [np.array([0, 1])])


def test_k_equal_to_d_is_refused():
    x = np.random.default_rng(3).standard_normal((20, 4))
    with pytest.raises(ValueError, match="n_components = d"):
        FACE(n_components=4).fit(x, [np.arange(10), np.arange(10, 20)])


def test_nan_in_a_row_outside_every_group_is_rejected():
    x = np.random.default_rng(4).standard_normal((10, 3))
    x[9, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        FACE(n_components=1).fit(x, [np.array([0, 1, 2]), np.array([3, 4])])
    x[9, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        FACE(n_components=1).fit(x, np.r_[0, 0, 0, 1, 1, -1, -1, -1, -1, -1])


def test_k_above_the_scatter_rank_warns():
    x = np.random.default_rng(5).standard_normal((6, 8))
    groups = [np.array([0, 1]), np.array([2, 3])]  # scatter of rank 2 in d = 8
    with pytest.warns(UserWarning, match="exceeds the rank 2"):
        m = FACE(n_components=3).fit(x, groups)
    assert m.scatter_rank_ == 2
    assert len(m.warnings_) == 1
    ok = FACE(n_components=2).fit(x, groups)
    assert ok.warnings_ == []


@pytest.mark.parametrize("offset", [0.0, 100.0])
def test_float32_scatter_matches_float64_to_a_millionth(monkeypatch, offset):
    # float32 rows far from the origin (offset 100, within-group spread ~1): a float32 Gram of
    # the raw rows would lose ~(100)²·6e-8 ≈ 6e-4 of the scatter to cancellation; centring on
    # the group means first keeps the error near float32 rounding of the centred values.
    monkeypatch.setattr(face_module, "_CHUNK_ROWS", 1000)  # groups straddle chunk borders
    monkeypatch.setattr(face_module, "_MIXED_CHUNK_ROWS", 300)
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((6000, 40)) + offset).astype(np.float32)
    x[:, :3] *= 3.0
    sizes = rng.integers(2, 9, size=900)
    rows = np.concatenate([rng.choice(6000, size=s, replace=False) for s in sizes])
    groups = np.split(rows, np.cumsum(sizes)[:-1])
    groups.append(np.arange(6000))  # and one big group
    mixed = FACE(n_components=3).fit(x, groups)  # "auto": float32 input → mixed
    double = FACE(n_components=3, precision="double").fit(x, groups)
    assert mixed.precision_ == "mixed"
    assert double.precision_ == "double"
    flat, sz = as_groups(groups, 6000)
    s32 = face_module.within_group_scatter(x, flat, sz, "mixed")
    s64 = face_module.within_group_scatter(x.astype(np.float64), flat, sz, "double")
    assert np.linalg.norm(s32 - s64) / np.linalg.norm(s64) < 1e-6
    assert np.linalg.norm(mixed.sigma_ - double.sigma_, 2) < 1e-6
    assert_allclose(mixed.singular_values_, double.singular_values_, rtol=1e-6)


def test_unknown_precision_is_refused():
    x = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match="precision must be"):
        FACE(n_components=1, precision="half").fit(x, [np.arange(5)])
