"""The sensitive directions of the Adult runs (experiments/adult/directions.py) and the split."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from experiments.adult.data import adult_both, random_split
from experiments.adult.directions import (
    authors_directions,
    authors_recorded,
    complement_projector,
    directions_of,
    gender_weights,
    orthonormal,
    sensitive_directions,
    softmax_weights,
)

NAMES = ["age", "hours", "race=Non-white", "race=White", "sex=Female", "sex=Male"]


def _records(n=1_500, seed=0):
    rng = np.random.default_rng(seed)
    female = rng.random(n) < 0.4
    white = rng.random(n) < 0.8
    age = rng.normal(size=n) - 0.8 * female
    hours = rng.normal(size=n) - 1.0 * female
    x = np.column_stack([age, hours, ~white, white, female, ~female]).astype(float)
    return x, female


def test_the_softmax_regression_finds_the_gender_direction():
    x, female = _records()
    w = softmax_weights(x[:, :4], female, seed=0, steps=1_500)
    direction = w[:, 1] - w[:, 0]
    # their penalty 0.1 · ½(‖w₀‖² + ‖w₁‖²) on balanced batches is, for u = w₁ − w₀ = 2w₁ at the
    # optimum, a balanced logistic regression with C = 20 / n
    reference = LogisticRegression(C=20 / len(x), class_weight="balanced")
    reference = reference.fit(x[:, :4], female).coef_[0]
    cosine = direction @ reference / np.linalg.norm(direction) / np.linalg.norm(reference)
    assert cosine > 0.99
    assert direction[0] < 0
    assert direction[1] < 0


def test_the_authors_directions_span_the_weights_and_the_flip_axes():
    x, female = _records()
    weights = gender_weights(x, NAMES, female, seed=0, steps=300)
    assert set(weights) == set(NAMES[:4])  # the gender columns are not features of it
    basis = authors_directions(NAMES, weights)
    np.testing.assert_allclose(basis @ basis.T, np.eye(len(basis)), atol=1e-10)
    assert len(basis) == 4  # two weight vectors, the gender and the race axis
    keep = complement_projector(basis)
    flip_gender = np.array([0, 0, 0, 0, -1, 1.0])
    flip_race = np.array([0, 0, -1, 1, 0, 0.0])
    for v in (flip_gender, flip_race, *np.array([weights[n] for n in NAMES[:4]]).T):
        v = np.r_[v, 0, 0] if v.size == 4 else v
        np.testing.assert_allclose(keep @ v, 0, atol=1e-10)  # SenSR's metric ignores them
    # without the gender columns: the same regression, the race axis only
    basis_without = authors_directions(NAMES[:4], weights)
    assert len(basis_without) == 3


def test_the_record_of_the_authors_directions_rebuilds_them_through_json():
    x, female = _records()
    directions, record = authors_recorded(x, NAMES, female, seed=4, steps=300)
    weights = gender_weights(x, NAMES, female, seed=4, steps=300)
    np.testing.assert_array_equal(directions, authors_directions(NAMES, weights))
    assert record["axes"] == [["sex=Male", "sex=Female"], ["race=White", "race=Non-white"]]
    stored = json.loads(json.dumps(record))  # as a version's parameters keep it
    np.testing.assert_array_equal(directions_of(stored, NAMES), directions)
    with pytest.raises(ValueError, match="unknown record"):
        directions_of({"recipe": "other"}, NAMES)


def test_the_apps_recipe_is_the_demos_projection_orthonormalised():
    x, female = _records()
    basis = sensitive_directions("app", x, NAMES, female, seed=0)
    assert len(basis) == 5  # a classifier and four one-hot axes
    np.testing.assert_allclose(orthonormal(basis) @ orthonormal(basis).T, np.eye(5), atol=1e-10)


def test_a_run_splits_both_files_80_20_at_random():
    both = adult_both()
    assert len(both) == 30_162 + 15_060
    assert both["key"].is_unique
    train, test = random_split(both, seed=3)
    assert len(train) == round(0.8 * len(both))
    assert len(train) + len(test) == len(both)
    assert not set(train["key"]) & set(test["key"])
    assert train["key"].str.startswith("test-").any()  # the files are mixed
    again, _ = random_split(both, seed=3)
    other, _ = random_split(both, seed=4)
    assert again["key"].tolist() == train["key"].tolist()
    assert other["key"].tolist() != train["key"].tolist()
