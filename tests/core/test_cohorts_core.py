"""The cohorts' numbers (learning/core/fairness/cohorts.py): the permutation test of cohort
labels over annotators holds its level when the cohorts share a rule and finds a difference in
one field, names that field, and says how small p can get with few annotators."""

from __future__ import annotations

import numpy as np

from learning.core.fairness.cohorts import (
    annotator_scores,
    cohort_permutation_test,
    difference_fields,
    score_difference,
)

STARTS = np.array([0, 1, 2, 3])  # four one-column fields


def answers(rng, weights_by_annotator, per=60):
    z, y, who = [], [], []
    for a, w in enumerate(weights_by_annotator):
        za = rng.normal(size=(per, 4))
        d = (za**2) @ np.asarray(w)
        z.append(za)
        y.append((rng.random(per) < 2 / (1 + np.exp(d))).astype(float))
        who.append(np.full(per, a))
    return np.concatenate(z), np.concatenate(y), np.concatenate(who)


A = [0.6, 0.6, 0.2, 0.0]
B = [0.0, 0.6, 0.2, 0.0]  # ignores field 0


def test_the_test_holds_its_level_when_every_cohort_follows_one_rule():
    rng = np.random.default_rng(1)
    low = 0
    draws = 100
    for _ in range(draws):
        z, y, who = answers(rng, [A] * 12)
        scores, _, n = annotator_scores(z, y, 0.3 * np.eye(4), who)
        cohort = np.repeat([0, 1], 6)
        low += cohort_permutation_test(scores, n, cohort, permutations=199).p_value < 0.05
    assert low <= 10  # 5 % expected; 10 of 100 is beyond its binomial 99 % range


def test_the_test_finds_cohorts_whose_rules_differ_in_one_field_and_names_it():
    rng = np.random.default_rng(2)
    z, y, who = answers(rng, [A] * 6 + [B] * 6)
    scores, annotators, n = annotator_scores(z, y, 0.3 * np.eye(4), who)
    cohort = (annotators >= 6).astype(int)
    assert cohort_permutation_test(scores, n, cohort).p_value < 0.01
    shares = difference_fields(score_difference(scores, n, cohort, 0, 1, 4), STARTS)
    assert int(np.argmax(shares)) == 0
    assert np.isclose(shares.sum(), 1.0)


def test_the_fitted_difference_names_its_field_too():
    sigma_a, sigma_b = np.diag([1.0, 1.0, 0.2, 0.0]), np.diag([0.0, 1.0, 0.2, 0.0])
    shares = difference_fields(sigma_a - sigma_b, STARTS)
    assert np.allclose(shares, [1, 0, 0, 0])


def test_two_annotators_a_cohort_cannot_reach_a_small_p_value():
    rng = np.random.default_rng(3)
    z, y, who = answers(rng, [A, A, B, B])
    scores, _, n = annotator_scores(z, y, 0.3 * np.eye(4), who)
    test = cohort_permutation_test(scores, n, np.array([0, 0, 1, 1]))
    assert np.isclose(test.smallest_p, 1 / 6)
    assert test.p_value >= 0.2  # the labelling and its mirror image give one T: about 1/3
