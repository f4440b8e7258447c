"""The feature map φ: a hand-computed case, scikit-learn's ColumnTransformer, every bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from spaces.records import featuremap
from spaces.records.featuremap import (
    apply_feature_map,
    build_feature_map,
    feature_map_json,
    validate_feature_map,
)


def tiny() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [20, 30, 40],
            "job": ["b", " a", "b "],
            "income": [">50K", "<=50K", ">50K"],
        }
    )


def test_tiny_case_by_hand():
    spec = build_feature_map(tiny(), numeric=["age"], categorical=["job"], excluded=["income"])
    sd = math.sqrt(200 / 3)  # population sd of 20, 30, 40
    assert spec == {
        "format": "fairmetric.featuremap",
        "version": 1,
        "features": [
            {"column": "age", "kind": "numeric", "mean": 30.0, "scale": pytest.approx(sd)},
            {"column": "job", "kind": "categorical", "categories": ["a", "b"]},
        ],
        "excluded": ["income"],
        "feature_names": ["age", "job=a", "job=b"],
    }
    expected = np.array([[-10 / sd, 0, 1], [0, 1, 0], [10 / sd, 0, 1]])
    assert_allclose(apply_feature_map(spec, tiny()), expected, rtol=0, atol=1e-15)


def test_spec_is_plain_json_that_round_trips():
    spec = build_feature_map(tiny(), numeric=["age"], categorical=["job"], excluded=["income"])
    again = json.loads(json.dumps(spec))
    assert again == spec
    assert_array_equal(apply_feature_map(again, tiny()), apply_feature_map(spec, tiny()))


def test_feature_map_json_is_the_same_bytes_for_the_same_map():
    frame = tiny().assign(job=["café", "thé", "café"])
    spec = build_feature_map(frame, numeric=["age"], categorical=["job"], excluded=["income"])
    body = feature_map_json(spec)
    assert body == json.dumps(spec, sort_keys=True, ensure_ascii=False).encode("utf-8")
    assert feature_map_json(dict(reversed(spec.items()))) == body  # key order does not matter
    assert "café".encode() in body  # UTF-8, not \\u escapes
    assert json.loads(body) == spec


def hand_made() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 60
    return pd.DataFrame(
        {
            "age": rng.integers(17, 90, n),
            "hours": rng.normal(40, 12, n),
            "constant": np.full(n, 3.5),
            "workclass": rng.choice(["Private", "State-gov", "Self-emp", "?"], n),
            "race": rng.choice(["White", "Black", "Asian-Pac-Islander"], n),
            "label": rng.choice(["<=50K", ">50K"], n),
        }
    )


def test_matches_sklearn_column_transformer():
    frame = hand_made()
    numeric, categorical = ["age", "hours", "constant"], ["workclass", "race"]
    spec = build_feature_map(frame, numeric=numeric, categorical=categorical, excluded=["label"])
    reference = ColumnTransformer(
        [
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
        ]
    ).fit(frame)
    assert_allclose(apply_feature_map(spec, frame), reference.transform(frame), rtol=0, atol=1e-12)
    # New records, one with an unseen category: sklearn ignores it, φ gives zeros too.
    new = frame.head(5).copy()
    new.loc[new.index[0], "workclass"] = "Never-worked"
    out = apply_feature_map(spec, new)
    assert_allclose(out, reference.transform(new), rtol=0, atol=1e-12)
    cols = [i for i, n in enumerate(spec["feature_names"]) if n.startswith("workclass=")]
    assert_array_equal(out[0, cols], 0.0)
    assert spec["features"][2]["scale"] == 1.0  # a constant column: sd 0 → scale 1


def test_column_order_in_frame_does_not_matter_and_extra_columns_are_ignored():
    spec = build_feature_map(tiny(), numeric=["age"], categorical=["job"], excluded=["income"])
    shuffled = tiny()[["income", "job", "age"]].assign(other=1)
    assert_array_equal(apply_feature_map(spec, shuffled), apply_feature_map(spec, tiny()))


def test_numbers_given_as_strings_with_spaces_are_read():
    spec = build_feature_map(tiny(), numeric=["age"], categorical=["job"])
    as_text = tiny().assign(age=[" 20", "30 ", "40"])
    assert_array_equal(apply_feature_map(spec, as_text), apply_feature_map(spec, tiny()))


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (tiny().drop(columns="job"), "column 'job' is missing"),
        (tiny().assign(age=[20, "old", 40]), "column 'age', row 1: 'old' is not a number"),
        (tiny().assign(age=[20, None, 40]), "column 'age', row 1: is missing"),
        (tiny().assign(age=[20, 30, float("inf")]), "column 'age', row 2"),
    ],
)
def test_apply_refuses_bad_records_naming_column_and_row(frame, message):
    spec = build_feature_map(tiny(), numeric=["age"], categorical=["job"])
    with pytest.raises(ValueError, match=message):
        apply_feature_map(spec, frame)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"numeric": ["age"], "categorical": ["age"]}, "'age' is given more than one role"),
        ({"numeric": [], "categorical": []}, "at least one"),
        ({"numeric": ["salary"], "categorical": []}, "column 'salary' is missing"),
        ({"numeric": ["job"], "categorical": []}, "column 'job', row 0: 'b' is not a number"),
        ({"numeric": ["age"], "categorical": [], "excluded": ["nope"]}, "'nope' is missing"),
    ],
)
def test_build_refuses_bad_declarations(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_feature_map(tiny(), **kwargs)


def test_build_refuses_an_empty_table():
    with pytest.raises(ValueError, match="no rows"):
        build_feature_map(tiny().head(0), numeric=["age"], categorical=[])


def good() -> dict:
    return build_feature_map(tiny(), numeric=["age"], categorical=["job"], excluded=["income"])


def spoiled(**changes) -> dict:
    spec = good()
    for path, value in changes.items():
        target = spec
        *parents, last = path.split("__")
        for p in parents:
            target = target[int(p)] if p.isdigit() else target[p]
        target[int(last) if last.isdigit() else last] = value
    return spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([], "JSON object"),
        (spoiled(format="pickle"), "format must be"),
        (spoiled(version=2), "unsupported feature-map version 2"),
        (spoiled(features=[]), "non-empty list"),
        (spoiled(features__0__kind="ordinal"), "kind must be one of"),
        (spoiled(features__0__scale=0), "scale positive"),
        (spoiled(features__0__mean="30"), "must be numbers"),
        (spoiled(features__0__mean=float("nan")), "finite"),
        (spoiled(features__1__categories=["a", "a"]), "appears twice"),
        (spoiled(features__1__categories=[1, 2]), "list of strings"),
        (spoiled(features__1__column="age"), "'age' appears twice"),
        (spoiled(excluded=["job"]), "both a feature and excluded"),
        (spoiled(feature_names=["age", "job=b", "job=a"]), "feature_names do not match"),
    ],
)
def test_validate_names_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        validate_feature_map(spec)


def test_apply_imports_no_sklearn():
    """apply_feature_map is numpy/pandas only: its source names neither sklearn nor our apps."""
    import inspect

    source = inspect.getsource(featuremap.apply_feature_map)
    assert "sklearn" not in source
    module_imports = [
        line
        for line in inspect.getsource(featuremap).splitlines()
        if line.startswith(("import", "from"))
    ]
    assert module_imports == [
        "from __future__ import annotations",
        "import json",
        "import math",
        "from collections.abc import Sequence",
        "import numpy as np",
        "import pandas as pd",
    ]


def docs_apply():
    """The copy of apply_feature_map printed in docs/export.md, executed."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "export.md").read_text()
    found = re.search(
        r"<!-- example:featuremap -->\s*```python\n(.*?)```\s*<!-- /example:featuremap -->",
        text,
        re.S,
    )
    assert found, "docs/export.md lost its marked apply_feature_map"
    namespace: dict = {}
    exec(compile(found.group(1), "docs/export.md", "exec"), namespace)
    return namespace["apply_feature_map"]


def test_the_documented_copy_agrees_with_the_module():
    frame = hand_made()
    spec = build_feature_map(
        frame, numeric=["age", "hours"], categorical=["workclass", "race"], excluded=["label"]
    )
    new = frame.head(8).copy()
    new["workclass"] = new["workclass"].astype(object)
    new.loc[new.index[0], "workclass"] = "Never-worked"  # unseen
    new.loc[new.index[1], "race"] = None  # missing: ""
    new.loc[new.index[2], "workclass"] = "  Private "  # spaces stripped
    new["age"] = new["age"].astype(str)  # numbers as text
    assert_array_equal(docs_apply()(spec, new), apply_feature_map(spec, new))
