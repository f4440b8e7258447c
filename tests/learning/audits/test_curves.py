"""The rates beyond one L and beyond k: the all-pairs violation rate within ε estimated from
uniformly sampled pairs lies within ±2 points of a brute force over every pair of a 3,000-record
sample of Adult (and its interval covers it); the curve over L agrees with the neighbour figures
at the audit's L and with a direct count at every L."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from experiments.adult.data import (
    CATEGORICAL,
    LABEL,
    NUMERIC,
    POSITIVE,
    adult_frame,
    gender_directions,
)
from experiments.adult.measures import project_out
from learning.core.audit import GAP_TOL, comparable_radius, metric_factor
from learning.core.fairness.curves import L_GRID, all_pairs_rate, rate_curve, wilson
from spaces.records.featuremap import apply_feature_map, build_feature_map

SAMPLE = 3_000


@pytest.fixture(scope="module")
def adult_sample():
    frame = adult_frame("train")
    frame = frame.iloc[np.random.default_rng(5).choice(len(frame), SAMPLE, replace=False)]
    spec = build_feature_map(frame, numeric=NUMERIC, categorical=CATEGORICAL)
    phi = apply_feature_map(spec, frame)
    names = list(spec["feature_names"])
    sigma = project_out(np.eye(len(names)), gender_directions(phi, names)[0])
    labels = (frame[LABEL] == POSITIVE).to_numpy()
    scores = LogisticRegression(max_iter=2000).fit(phi, labels).predict_proba(phi)[:, 1]
    return phi @ metric_factor(sigma), scores


def brute_force(points, scores, epsilon, lipschitz) -> tuple[float, float]:
    """Every pair i < j: the violation rate within ε and the share of pairs within ε."""
    n = len(scores)
    within = violations = 0
    for i in range(n - 1):
        d = np.linalg.norm(points[i + 1 :] - points[i], axis=1)
        gap = np.abs(scores[i + 1 :] - scores[i]) - lipschitz * d
        close = d <= epsilon
        within += int(close.sum())
        violations += int((close & (gap > GAP_TOL)).sum())
    return violations / within, within / (n * (n - 1) / 2)


@pytest.mark.parametrize(
    ("epsilon", "lipschitz"),
    [(comparable_radius(0.5), 1.0), (4.0, 0.1)],
    ids=["default-radius", "wide-radius-small-L"],
)
def test_the_sampled_all_pairs_rate_is_within_two_points_of_the_brute_force(
    adult_sample, epsilon, lipschitz
):
    points, scores = adult_sample
    truth, within_truth = brute_force(points, scores, epsilon, lipschitz)
    print(f"brute force: rate {truth:.4f}, within ε {within_truth:.4f}")
    found = all_pairs_rate(points, scores, epsilon=epsilon, lipschitz=lipschitz, m=200_000, seed=1)
    rate = found.violation_rate
    assert abs(rate.estimate - truth) <= 0.02
    assert rate.low <= truth <= rate.high
    assert abs(found.within_share.estimate - within_truth) <= 0.01
    # the interval keeps its level: other draws of pairs (smaller, for the suite's time)
    covered = sum(
        found.violation_rate.low <= truth <= found.violation_rate.high
        for found in (
            all_pairs_rate(points, scores, epsilon=epsilon, lipschitz=lipschitz, m=20_000, seed=s)
            for s in range(2, 62)
        )
    )
    assert covered >= 53  # 60 draws at 95 %: at least 53 covers but for a 1-in-100 bad luck
    # the curve at the audit's L is the rate
    at = int(np.argmin(np.abs(L_GRID - lipschitz)))
    assert found.curve[at] == pytest.approx(rate.estimate)


def test_the_curve_counts_each_L_directly_and_ends_at_the_distance_zero_pairs():
    rng = np.random.default_rng(0)
    diff = np.abs(rng.normal(size=500))
    dist = np.abs(rng.normal(size=500))
    dist[:20] = 0.0
    diff[:5] = 0.0  # equal scores at distance 0: no violation at any L
    rates, limit, pairs = rate_curve(diff, dist, epsilon=1.5)
    close = dist <= 1.5
    assert pairs == close.sum()
    for L, r in zip(L_GRID, rates, strict=True):
        assert r == pytest.approx(((diff - L * dist > GAP_TOL) & close).sum() / close.sum())
    assert limit == pytest.approx(15 / close.sum())
    assert np.all(np.diff(rates) <= 0)  # a larger L forgives more


def test_wilson_matches_its_formula_and_stays_in_0_1():
    found = wilson(0, 50)
    assert found.low == pytest.approx(0.0, abs=1e-12)
    assert found.high == pytest.approx(0.0714, abs=1e-3)  # 1.96² / (50 + 1.96²)
    mid = wilson(30, 100)
    assert mid.low == pytest.approx(0.2189, abs=1e-3)
    assert mid.high == pytest.approx(0.3958, abs=1e-3)
