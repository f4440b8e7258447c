"""learning.core.audit: violations, consistency, flips, field shares and intervals, each against
a hand-computed case or an independent brute-force computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learning.core import audit as core_audit
from learning.core.audit import (
    comparable_radius,
    consistency,
    field_shares,
    item_statistics,
    metric_factor,
    neighbour_figures,
    scale_to_match,
    violating_pairs,
)
from learning.core.explore import p_comparable
from learning.core.fairness.fields import field_weights

# Four items on a line at 0, 1, 2, 10; each item's two nearest others.
NEIGHBOURS = np.array([[1, 2], [0, 2], [1, 0], [2, 1]])
DISTANCES = np.array([[1.0, 2.0], [1.0, 1.0], [1.0, 2.0], [8.0, 9.0]])
SCORES = np.array([0.0, 0.5, 3.0, 3.2])


def test_violations_by_hand():
    # epsilon 2.5 keeps every pair but item 3's; L = 1: gap = |Δs| − d.
    # item 0: (0,1) |0.5|-1 <0 ; (0,2) 3-2 = 1 > 0 → 1 violation, gap 1
    # item 1: (1,0) no ; (1,2) 2.5-1 = 1.5 → 1 violation
    # item 2: (2,1) 1.5 ; (2,0) 1 → 2 violations
    # item 3: none within ε
    stats = item_statistics(NEIGHBOURS, DISTANCES, SCORES, epsilon=2.5, lipschitz=1.0)
    assert_allclose(stats["n"], [2, 2, 2, 0])
    assert_allclose(stats["v"], [1, 1, 2, 0])
    assert_allclose(stats["g"], [1.0, 1.5, 2.5, 0.0])
    assert_allclose(stats["m"], [1.0, 1.5, 1.5, -np.inf])
    figures = neighbour_figures(NEIGHBOURS, DISTANCES, SCORES, epsilon=2.5, lipschitz=1.0)
    assert figures.pairs_within == 6
    assert figures.violations == 4
    assert figures.violation_rate.estimate == pytest.approx(4 / 6)
    assert figures.mean_gap.estimate == pytest.approx(5.0 / 4)
    assert figures.worst_gap.estimate == pytest.approx(1.5)
    # consistency on scores: 1 - mean |s_i - mean(s_N(i))|
    expected = 1 - np.mean([abs(0 - 1.75), abs(0.5 - 1.5), abs(3.0 - 0.25), abs(3.2 - 1.75)])
    assert figures.consistency.estimate == pytest.approx(expected)
    assert figures.decision_flip is None


def test_a_larger_lipschitz_constant_or_smaller_epsilon_finds_fewer():
    low = item_statistics(NEIGHBOURS, DISTANCES, SCORES, epsilon=2.5, lipschitz=2.0)
    assert_allclose(low["v"], [0, 1, 1, 0])  # (1,2) 2.5 > 2, nothing else
    tight = item_statistics(NEIGHBOURS, DISTANCES, SCORES, epsilon=1.0, lipschitz=1.0)
    assert_allclose(tight["n"], [1, 2, 1, 0])
    assert_allclose(tight["v"], [0, 1, 1, 0])


def test_violating_pairs_are_unordered_once_and_worst_first():
    pairs = violating_pairs(NEIGHBOURS, DISTANCES, SCORES, epsilon=2.5, lipschitz=1.0)
    # (1,2): needed 2.5/1 = 2.5 ; (0,2): 3/2 = 1.5
    assert list(zip(pairs.first, pairs.second, strict=True)) == [(1, 2), (0, 2)]
    assert_allclose(pairs.gap, [1.5, 1.0])
    assert_allclose(pairs.distance, [1.0, 2.0])
    assert_allclose(pairs.needed, [2.5, 1.5])


def test_pairs_at_distance_zero_come_first_by_their_score_difference():
    neighbours = np.array([[1], [0], [3], [2]])
    distances = np.array([[0.0], [0.0], [0.5], [0.5]])
    scores = np.array([0.1, 0.2, 0.0, 0.45])  # (0,1): Δ 0.1 at d 0; (2,3): Δ 0.45 at 0.5
    pairs = violating_pairs(neighbours, distances, scores, epsilon=1.0, lipschitz=0.5)
    assert list(pairs.first) == [0, 2]
    assert pairs.needed[0] > 1e3  # as good as infinite


def test_equal_scores_at_distance_zero_are_no_violation():
    neighbours = np.array([[1], [0]])
    distances = np.zeros((2, 1))
    stats = item_statistics(neighbours, distances, np.array([0.3, 0.3]), epsilon=1, lipschitz=1)
    assert stats["v"].sum() == 0


def test_consistency_equals_aif360_for_binary_labels():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=50)
    neighbours = np.stack([rng.choice(np.delete(np.arange(50), i), 5, False) for i in range(50)])
    aif360 = 1 - np.mean(np.abs(labels - labels[neighbours].mean(axis=1)))  # their formula
    ours = 1 - consistency(neighbours, labels, categorical=True).mean()
    assert ours == pytest.approx(aif360)


def test_decision_flips_by_hand():
    decisions = np.array(["yes", "yes", "no", "no"])
    figures = neighbour_figures(
        NEIGHBOURS, DISTANCES, SCORES, epsilon=2.5, lipschitz=1.0, decisions=decisions
    )
    # nearest: 0→1 same, 1→0 same, 2→1 differs, 3→2 same
    assert figures.decision_flip.estimate == pytest.approx(0.25)
    # share of differing neighbours: item0 1/2, item1 1/2, item2 2/2, item3 (2 no, 1 yes) 1/2
    assert figures.consistency.estimate == pytest.approx(1 - np.mean([0.5, 0.5, 1.0, 0.5]))


def test_figures_match_a_brute_force_reference():
    rng = np.random.default_rng(0)
    n, k = 120, 6
    x = rng.normal(size=(n, 3))
    scores = rng.random(n)
    full = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    np.fill_diagonal(full, np.inf)
    idx = np.argsort(full, axis=1)[:, :k]
    dist = np.take_along_axis(full, idx, axis=1)
    eps, lip = float(np.median(dist)), 0.4
    figures = neighbour_figures(idx, dist, scores, epsilon=eps, lipschitz=lip, n_boot=50)
    # brute force: loop over every (item, neighbour) pair
    within = bad = 0
    gaps = []
    unordered = set()
    for i in range(n):
        for j, d in zip(idx[i], dist[i], strict=True):
            if d <= eps:
                within += 1
                gap = abs(scores[i] - scores[j]) - lip * d
                if gap > 1e-9:
                    bad += 1
                    gaps.append(gap)
                    unordered.add((min(i, j), max(i, j)))
    assert figures.pairs_within == within
    assert figures.violations == bad
    assert figures.violation_rate.estimate == pytest.approx(bad / within)
    assert figures.mean_gap.estimate == pytest.approx(np.mean(gaps))
    assert figures.worst_gap.estimate == pytest.approx(max(gaps))
    pairs = violating_pairs(idx, dist, scores, epsilon=eps, lipschitz=lip)
    assert set(zip(pairs.first.tolist(), pairs.second.tolist(), strict=True)) == unordered
    assert np.all(np.diff(pairs.needed) <= 1e-12)


def test_the_violation_rate_interval_covers_at_its_nominal_level():
    """Items with independent neighbourhoods: each of an item's 4 pairs within ε violates with
    probability p (simulated through the per-item statistics the bootstrap resamples); the
    95 % interval should cover p about 95 % of the time."""
    rng = np.random.default_rng(11)
    p, n, k, trials = 0.2, 300, 4, 200
    covered = 0
    for trial in range(trials):
        violate = rng.random((n, k)) < p
        stats = {
            "n": np.full(n, float(k)),
            "v": violate.sum(axis=1).astype(float),
            "g": violate.sum(axis=1) * 0.1,
            "m": np.where(violate.any(axis=1), 0.1, -np.inf),
            "c": np.zeros(n),
        }
        boot = core_audit._bootstrap(stats, 200, trial)
        interval = core_audit._interval(stats["v"].sum() / stats["n"].sum(), boot["v"] / boot["n"])
        covered += interval.low <= p <= interval.high
    assert 0.90 <= covered / trials <= 0.99, covered / trials


def test_bootstrap_runs_in_chunks_for_many_items(monkeypatch):
    monkeypatch.setattr(core_audit, "CHUNK", 7)  # many chunks: the same figures
    rng = np.random.default_rng(5)
    idx = np.stack([rng.choice(np.delete(np.arange(40), i), 3, False) for i in range(40)])
    dist = rng.random((40, 3))
    scores = rng.random(40)
    chunked = neighbour_figures(idx, dist, scores, epsilon=0.8, lipschitz=0.5, n_boot=30)
    assert 0 <= chunked.violation_rate.low <= chunked.violation_rate.estimate
    assert chunked.violation_rate.estimate <= chunked.violation_rate.high <= 1
    assert chunked.worst_gap.high == pytest.approx(chunked.worst_gap.estimate)


def test_field_shares_are_each_fields_own_part_between_0_and_1():
    rng = np.random.default_rng(2)
    root = rng.normal(size=(5, 5))
    root[:, 3] *= -4  # fields that offset each other through Σ's cross terms
    sigma = root @ root.T
    w = metric_factor(sigma)
    z = rng.normal(size=(200, 5))
    starts = np.array([0, 2, 3])  # fields: columns {0,1}, {2}, {3,4}
    shares = field_shares(z, w, starts)
    assert_allclose(shares.sum(axis=1), 1.0)
    assert np.all((shares >= 0) & (shares <= 1))
    # by hand: share_f = z_f' Σ_ff z_f / Σ_g z_g' Σ_gg z_g (the pair differing in f alone)
    block = [slice(0, 2), slice(2, 3), slice(3, 5)]
    for m in range(5):
        own = [z[m][b] @ sigma[b, b] @ z[m][b] for b in block]
        assert_allclose(shares[m], np.array(own) / sum(own))
    # the old split, z_f' Σ z / z' Σ z, leaves [0, 1] on these pairs: that was the bug
    total = np.einsum("ij,jk,ik->i", z, sigma, z)
    cross = np.column_stack([(z[:, b] * (z @ sigma)[:, b]).sum(axis=1) for b in block])
    assert ((cross / total[:, None]) < 0).any()


def test_a_field_the_metric_ignores_gets_no_share_and_distance_zero_gives_nan():
    sigma = np.diag([1.0, 0.0])  # the second field ignored
    w = metric_factor(sigma)
    assert w.shape == (2, 1)
    shares = field_shares(np.array([[1.0, 5.0], [0.0, 3.0]]), w, np.array([0, 1]))
    assert_allclose(shares[0], [1.0, 0.0])
    assert np.isnan(shares[1]).all()


def test_metric_factor_reproduces_d_sigma():
    rng = np.random.default_rng(4)
    root = rng.normal(size=(6, 3))
    sigma = root @ root.T  # rank 3
    w = metric_factor(sigma)
    assert w.shape == (6, 3)
    z = rng.normal(size=(10, 6))
    assert_allclose(np.linalg.norm(z @ w, axis=1), np.sqrt(np.einsum("ij,jk,ik->i", z, sigma, z)))


def test_comparable_radius_is_where_explore_says_one_half():
    r = comparable_radius(0.5)
    assert r == pytest.approx(math.sqrt(math.log(3)))
    assert p_comparable(r**2) == pytest.approx(0.5)
    assert p_comparable(comparable_radius(0.9) ** 2) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="p must be"):
        comparable_radius(1.0)


def test_scale_to_match_matches_positive_medians():
    assert scale_to_match([0, 1, 2, 3], [0, 0, 10, 20, 30]) == pytest.approx(2 / 20)
    assert scale_to_match([0, 0], [1, 2]) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0, "lipschitz": 1.0}, "epsilon must be a positive number"),
        ({"epsilon": 1.0, "lipschitz": math.nan}, "lipschitz must be a positive number"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        item_statistics(NEIGHBOURS, DISTANCES, SCORES, **kwargs)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="neighbours and distances"):
        item_statistics(NEIGHBOURS, DISTANCES[:, :1], SCORES, epsilon=1, lipschitz=1)
    with pytest.raises(ValueError, match="lie in"):
        item_statistics(NEIGHBOURS + 5, DISTANCES, SCORES, epsilon=1, lipschitz=1)


def test_field_weights_by_hand():
    # fields: a (1 column), b (2 columns, weightless), c (2 columns)
    sigma = np.diag([4.0, 0.0, 0.0, 1.0, 1.0])
    found = field_weights(sigma, np.array([0, 1, 3]))
    np.testing.assert_allclose(found.trace, [4 / 6, 0, 2 / 6])
    np.testing.assert_allclose(found.relative, [4 / 6 * 5, 0, 2 / 6 * 5 / 2])
    assert found.ignored.tolist() == [False, True, False]
    # 4, 1, 1 carry 100 % (> 90 %): three leading directions; c's two share eigenvalue 1
    np.testing.assert_allclose(found.carried, [4 / 6, 1 / 6, 1 / 6])
    np.testing.assert_allclose(found.leading, [4 / 6, 0, 2 / 6], atol=1e-12)
    np.testing.assert_allclose(found.directions.sum(axis=1), 1.0)


def test_field_weights_trace_share_is_the_mean_pair_share_under_isotropic_differences():
    """The metric's share of a field is what field_shares gives pairs on average (weighted by
    their own parts) when the differences are isotropic: E[z_fᵀΣ_ff z_f] / E[Σ_g z_gᵀΣ_gg z_g] =
    tr Σ_ff / tr Σ (Monte Carlo)."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(6, 6))
    sigma = a @ a.T
    starts = np.array([0, 2, 5])
    z = rng.normal(size=(40_000, 6))
    w = metric_factor(sigma)
    ends = np.append(starts[1:], 6)
    own = sum(np.sum((z[:, s:e] @ w[s:e]) ** 2, axis=1) for s, e in zip(starts, ends, strict=True))
    pair = field_shares(z, w, starts) * own[:, None]  # each field's own part z_fᵀΣ_ff z_f
    np.testing.assert_allclose(
        pair.mean(axis=0) / own.mean(), field_weights(sigma, starts).trace, atol=0.02
    )


def test_a_categorical_field_is_weighed_on_the_differences_of_its_levels():
    # a numeric field (column 0) and a categorical one of three levels (columns 1-3)
    euclid = field_weights(np.eye(4), np.array([0, 1]), np.array([False, True]))
    np.testing.assert_allclose(euclid.trace, [1 / 3, 2 / 3])  # the levels: 2 free directions
    np.testing.assert_allclose(euclid.relative, [1, 1])
    # FACE removing the level differences (I − QQᵀ, Q spanning them) ignores the field, though
    # Σ keeps weight 1/3 on each level column: no two records differ along (1, 1, 1).
    q = np.linalg.qr(np.array([[0, 1, -1, 0], [0, 1, 0, -1]], dtype=float).T)[0]
    face = np.eye(4) - q @ q.T
    assert np.trace(face[1:, 1:]) == pytest.approx(1.0)
    found = field_weights(face, np.array([0, 1]), np.array([False, True]))
    np.testing.assert_allclose(found.trace, [1, 0], atol=1e-12)
    assert found.ignored.tolist() == [False, True]
    assert field_weights(face, np.array([0, 1])).ignored.tolist() == [False, False]


def test_field_weights_refuses_bad_starts():
    with pytest.raises(ValueError, match="starts"):
        field_weights(np.eye(3), np.array([1, 2]))
    with pytest.raises(ValueError, match="starts"):
        field_weights(np.eye(3), np.array([0, 3]))
