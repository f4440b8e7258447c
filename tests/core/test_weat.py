"""WEAT: hand-computed case, a slow reference implementation, sampling, invariances."""

from __future__ import annotations

import dataclasses
from itertools import combinations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learning.core.weat import (
    WeatSpec,
    _effect_sizes,
    _jackknife_se,
    _within_gap,
    association_scores,
    bootstrap_effect_size_ci,
    effect_size_ci,
    weat,
    weat_suite,
)


def _slow_weat(X, Y, A, B, sigma):
    """Obviously correct WEAT: explicit loops, xᵀΣy inner products, all partitions."""
    d = X.shape[1]
    sigma = np.eye(d) if sigma is None else sigma

    def cos(u, v):
        nu, nv = np.sqrt(u @ sigma @ u), np.sqrt(v @ sigma @ v)
        return 0.0 if nu == 0 or nv == 0 else (u @ sigma @ v) / (nu * nv)

    def s(w):
        return (sum(cos(w, a) for a in A) / len(A)) - (sum(cos(w, b) for b in B) / len(B))

    scores = [s(w) for w in list(X) + list(Y)]
    nx = len(X)
    stat = sum(scores[:nx]) / nx - sum(scores[nx:]) / len(Y)
    mean = sum(scores) / len(scores)
    sd = (sum((v - mean) ** 2 for v in scores) / (len(scores) - 1)) ** 0.5
    hits, total = 0, 0
    for part in combinations(range(len(scores)), nx):
        inside = [scores[i] for i in part]
        outside = [scores[i] for i in range(len(scores)) if i not in part]
        perm = sum(inside) / nx - sum(outside) / len(outside)
        hits += abs(perm) >= abs(stat) - 1e-12
        total += 1
    return stat, stat / sd, hits / total, total, scores


def _random_psd(rng, d, rank=None):
    g = rng.standard_normal((d, rank or d))
    return g @ g.T / d


def test_hand_computed_two_plus_two_in_2d():
    # a=(1,0), b=(0,1): s(w) = cos(w,a) - cos(w,b).
    # x1=(1,0): s=1;  x2=(1,1): s=1/√2-1/√2=0;  y1=(0,1): s=-1;  y2=(0,2): s=-1.
    # statistic = mean(1,0) - mean(-1,-1) = 0.5 + 1 = 1.5.
    # all s = (1,0,-1,-1), mean -0.25, squared deviations 1.5625+0.0625+0.5625+0.5625 = 2.75,
    # sample variance 2.75/3, sd = 0.957427..., d = 1.5/sd = 1.566699...
    # The 6 partitions {0,1}:1.5 {0,2}:0.5 {0,3}:0.5 {1,2}:-0.5 {1,3}:-0.5 {2,3}:-1.5,
    # so |stat| ≥ 1.5 for 2 of 6: p = 1/3.
    X = np.array([[1.0, 0.0], [1.0, 1.0]])
    Y = np.array([[0.0, 1.0], [0.0, 2.0]])
    A, B = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    r = weat(X, Y, A, B)
    assert_allclose(r.s_x, [1.0, 0.0], atol=1e-15)
    assert_allclose(r.s_y, [-1.0, -1.0], atol=1e-15)
    assert_allclose(r.statistic, 1.5)
    assert_allclose(r.test_statistic, 1.5)
    assert_allclose(r.effect_size, 1.5 / np.sqrt(2.75 / 3.0))
    assert r.exact
    assert r.n_partitions == 6
    assert_allclose(r.p_value, 1.0 / 3.0)


@pytest.mark.parametrize(("nx", "ny", "use_sigma"), [(5, 5, False), (5, 5, True), (5, 3, True)])
def test_agrees_with_slow_reference(nx, ny, use_sigma):
    rng = np.random.default_rng(7 + nx + ny)
    d = 6
    X, Y = rng.standard_normal((nx, d)), rng.standard_normal((ny, d))
    A, B = rng.standard_normal((4, d)), rng.standard_normal((3, d))
    sigma = _random_psd(rng, d, rank=4) if use_sigma else None
    stat, eff, p, total, scores = _slow_weat(X, Y, A, B, sigma)
    r = weat(X, Y, A, B, sigma=sigma)
    assert r.exact
    assert r.n_partitions == total
    assert_allclose(np.r_[r.s_x, r.s_y], scores, rtol=1e-10, atol=1e-12)
    assert_allclose(r.statistic, stat, rtol=1e-10)
    assert_allclose(r.effect_size, eff, rtol=1e-10)
    assert_allclose(r.p_value, p, rtol=0, atol=1e-15)


def test_sampled_p_value_close_to_exact_when_forced_to_sample():
    rng = np.random.default_rng(3)
    d = 10
    X, Y = rng.standard_normal((8, d)) + 0.3, rng.standard_normal((8, d))
    A, B = rng.standard_normal((8, d)) + 0.3, rng.standard_normal((8, d))
    exact = weat(X, Y, A, B, n_permutations=50_000)
    assert exact.exact
    assert exact.n_partitions == 12870
    sampled = weat(X, Y, A, B, n_permutations=12869, random_state=1)
    assert not sampled.exact
    assert sampled.n_partitions == 12869
    se = np.sqrt(exact.p_value * (1 - exact.p_value) / 12869)
    assert abs(sampled.p_value - exact.p_value) <= 5 * se + 1e-4
    assert 0.0 < exact.p_value < 1.0


def test_sampled_partitions_are_subsets_without_replacement_and_uniform():
    from learning.core.weat import _partition_sums

    n, nx = 16, 8
    w = 2.0 ** np.arange(n)  # a partition sum encodes its subset as bits
    sums, exact = _partition_sums(w, nx, 12_000, np.random.default_rng(0))
    assert not exact
    bits = (sums.astype(np.int64)[:, None] >> np.arange(n)) & 1
    assert np.all(bits.sum(axis=1) == nx)  # exactly nx distinct words in every partition
    assert_allclose(bits.mean(axis=0), nx / n, atol=0.02)  # each word equally likely


def test_swapping_targets_flips_sign_and_keeps_p():
    rng = np.random.default_rng(11)
    X, Y, A, B = (rng.standard_normal((6, 5)) for _ in range(4))
    r1, r2 = weat(X, Y, A, B), weat(Y, X, A, B)
    assert_allclose(r2.effect_size, -r1.effect_size)
    assert_allclose(r2.statistic, -r1.statistic)
    assert_allclose(r2.p_value, r1.p_value)


def test_identity_sigma_equals_euclidean_and_projection_equals_projected_vectors():
    rng = np.random.default_rng(5)
    d = 7
    X, Y, A, B = (rng.standard_normal((6, d)) for _ in range(4))
    r_none, r_eye = weat(X, Y, A, B), weat(X, Y, A, B, sigma=np.eye(d))
    assert_allclose(r_eye.effect_size, r_none.effect_size, rtol=1e-12)
    assert r_eye.p_value == r_none.p_value
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    proj = np.eye(d) - np.outer(u, u)
    r_sigma = weat(X, Y, A, B, sigma=proj)
    r_proj = weat(X @ proj, Y @ proj, A @ proj, B @ proj)
    assert_allclose(r_sigma.effect_size, r_proj.effect_size, rtol=1e-10)
    assert_allclose(r_sigma.s_x, r_proj.s_x, rtol=1e-10, atol=1e-12)
    assert r_sigma.p_value == r_proj.p_value


def test_word_in_ignored_subspace_has_zero_association():
    X = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    Y = np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    A, B = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])
    sigma = np.diag([1.0, 1.0, 0.0])  # the third axis is ignored
    r = weat(X, Y, A, B, sigma=sigma)
    assert r.s_x[0] == 0.0
    assert np.all(np.isfinite([r.effect_size, r.p_value]))


def test_result_is_immutable():
    rng = np.random.default_rng(0)
    r = weat(*(rng.standard_normal((4, 3)) for _ in range(4)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.p_value = 0.0
    with pytest.raises(ValueError, match="read-only"):
        r.s_x[0] = 1.0


def test_bootstrap_interval_contains_the_estimate_and_is_deterministic():
    rng = np.random.default_rng(2)
    X, Y = rng.standard_normal((10, 4)) + 0.5, rng.standard_normal((10, 4))
    A, B = rng.standard_normal((6, 4)) + 0.5, rng.standard_normal((6, 4))
    ci = bootstrap_effect_size_ci(X, Y, A, B, n_boot=500, random_state=3)
    assert ci.low <= ci.estimate <= ci.high
    assert_allclose(ci.estimate, weat(X, Y, A, B).effect_size)
    assert ci == bootstrap_effect_size_ci(X, Y, A, B, n_boot=500, random_state=3)


def test_suite_runs_word_lists_against_metrics_and_reports_missing_words():
    rng = np.random.default_rng(4)
    vocab = {w: rng.standard_normal(5) for w in "abcdefghijklmnop"}
    tests = [
        WeatSpec("t1", list("abcd"), list("efgh"), list("ijk"), list("lmnz")),
        WeatSpec("t2", list("abc"), list("def"), list("ghi"), list("jkl")),
    ]
    sigma = _random_psd(rng, 5)
    rows = weat_suite(tests, {"euclid": None, "learned": sigma}, embeddings=vocab)
    assert [(r.test, r.metric) for r in rows] == [
        ("t1", "euclid"),
        ("t1", "learned"),
        ("t2", "euclid"),
        ("t2", "learned"),
    ]
    assert rows[0].missing == ("z",)
    mat = lambda ws: np.array([vocab[w] for w in ws])  # noqa: E731
    direct = weat(mat("abcd"), mat("efgh"), mat("ijk"), mat("lmn"), sigma=sigma)
    assert_allclose(rows[1].result.effect_size, direct.effect_size)
    assert rows[1].result.p_value == direct.p_value  # exact: independent of the random stream


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"Y": np.ones((3, 4))}, "dimension"),
        ({"A": np.full((2, 5), np.nan)}, "NaN"),
        ({"sigma": -np.eye(5)}, "positive semi-definite"),
        ({"n_permutations": 0}, "n_permutations"),
    ],
)
def test_bad_input_raises_value_error(kwargs, message):
    rng = np.random.default_rng(0)
    args = {k: rng.standard_normal((3, 5)) for k in "XYAB"}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        weat(**args)


def test_sampled_p_value_is_never_zero_and_uses_the_plus_one_correction():
    rng = np.random.default_rng(21)
    a, b = rng.standard_normal((8, 10)), rng.standard_normal((8, 10))
    x = rng.standard_normal((15, 10)) + 3.0 * a.mean(0)  # X strongly associated with A
    y = rng.standard_normal((15, 10)) + 3.0 * b.mean(0)
    r = weat(x, y, a, b, n_permutations=999, random_state=0)
    assert not r.exact
    assert r.p_value == 1.0 / 1000.0  # no sampled partition is as extreme: (0 + 1) / (999 + 1)
    exact = weat(x[:5], y[:5], a, b, n_permutations=1000)  # C(10, 5) = 252 ≤ 1000: enumerated
    assert exact.exact
    assert exact.p_value == 2.0 / 252.0  # observed partition and its mirror, no correction


def test_studentized_interval_uses_the_jackknife_error_of_a_direct_loop_on_delta():
    rng = np.random.default_rng(6)
    X, Y = rng.standard_normal((9, 4)) + 0.6, rng.standard_normal((11, 4))
    A, B = rng.standard_normal((6, 4)) + 0.5, rng.standard_normal((6, 4))
    s_x, s_y = association_scores(X, Y, A, B, None)

    def gap(sx, sy):  # δ: the gap in pooled within-set SDs, written out
        within = (np.sum((sx - sx.mean()) ** 2) + np.sum((sy - sy.mean()) ** 2)) / (
            sx.size + sy.size - 2
        )
        return (sx.mean() - sy.mean()) / np.sqrt(within)

    assert_allclose(_within_gap(s_x, s_y), gap(s_x, s_y), rtol=1e-12)
    loo = [gap(np.delete(s_x, i), s_y) for i in range(9)]
    loo += [gap(s_x, np.delete(s_y, i)) for i in range(11)]
    loo = np.array(loo)
    direct = np.sqrt(19 / 20 * np.sum((loo - loo.mean()) ** 2))
    assert_allclose(_jackknife_se(s_x, s_y), direct, rtol=1e-10)
    assert_allclose(_effect_sizes(s_x, s_y), weat(X, Y, A, B).effect_size)
    ci = effect_size_ci(X, Y, A, B, n_boot=500, random_state=3)
    assert ci.low <= ci.estimate <= ci.high
    # never narrower than Student's t on δ (18 degrees of freedom), mapped to the effect size
    p, se = 9 / 20, _jackknife_se(s_x, s_y)
    t_ends = gap(s_x, s_y) + np.array([-1, 1]) * 2.100922 * se
    mapped = t_ends / np.sqrt(1 + p * (1 - p) * t_ends**2)
    assert ci.low <= mapped[0] + 1e-9
    assert ci.high >= mapped[1] - 1e-9
    assert ci == effect_size_ci(X, Y, A, B, n_boot=500, random_state=3)
