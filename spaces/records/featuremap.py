"""The declared feature map φ of a record space: records (a table) → vectors, as plain JSON.

A specification is a small, versioned JSON object that anyone can apply to new records with
numpy and pandas alone — no pickle, no scikit-learn, nothing of fairmetric's::

    {"format": "fairmetric.featuremap", "version": 1,
     "features": [{"column": "age", "kind": "numeric", "mean": 38.6, "scale": 13.7},
                  {"column": "workclass", "kind": "categorical",
                   "categories": ["Federal-gov", "Private"]}],
     "excluded": ["income"],
     "feature_names": ["age", "workclass=Federal-gov", "workclass=Private"]}

Rules (:func:`apply_feature_map`):

* numeric feature → ``(x - mean) / scale``; ``scale`` is the population standard deviation
  (1.0 when it is 0), as scikit-learn's ``StandardScaler`` computes it;
* categorical feature → one column per entry of ``categories``, in that order, 1.0 where the
  value (compared as a string with surrounding spaces stripped; a missing value counts as the
  empty string) equals the category; a value not in ``categories`` → all zeros for that
  feature (scikit-learn's ``OneHotEncoder(handle_unknown="ignore")``);
* output columns in ``feature_names`` order: the features in the order listed;
* a missing required column, or a numeric value that is missing or not a number, raises
  ``ValueError`` naming the column and the row (the frame's index label);
* columns not named by a feature (the ``excluded`` ones, or any other) are ignored.

:func:`build_feature_map` fits the numbers with scikit-learn (numeric features first, then
categorical, each in the order given — the column order of a ``ColumnTransformer`` of a
``StandardScaler`` and a ``OneHotEncoder``); :class:`FeatureMapFit` does the same a chunk of
records at a time, for tables read in chunks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

FEATURE_MAP_FORMAT = "fairmetric.featuremap"
FEATURE_MAP_VERSION = 1
KINDS = ("numeric", "categorical")


def _strings(column: pd.Series) -> np.ndarray:
    """Values as stripped strings (missing → ""), an object array."""
    text = column.astype(object).where(column.notna(), "").astype(str).str.strip()
    return text.to_numpy(dtype=object)


def _numbers(column: pd.Series, name: str) -> np.ndarray:
    """Values as float64; ValueError naming the column and the first bad row."""
    raw = column.map(lambda v: v.strip() if isinstance(v, str) else v)
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        given = column.iloc[at]
        what = (
            "is missing"
            if pd.isna(given) or str(given).strip() == ""
            else f"{given!r} is not a number"
        )
        raise ValueError(f"column {name!r}, row {column.index[at]!r}: {what}")
    return values


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        raise ValueError(f"column {name!r} is missing (the frame has {len(frame.columns)} columns)")
    return frame[name]


def apply_feature_map(spec: dict, frame: pd.DataFrame) -> np.ndarray:
    """φ(records): an (n, len(feature_names)) float64 array; numpy and pandas only.

    Copy this function freely; the rules are in this module's docstring.
    """
    spec = validate_feature_map(spec)
    blocks = [np.empty((len(frame), 0))]
    for feature in spec["features"]:
        column = _column(frame, feature["column"])
        if feature["kind"] == "numeric":
            x = _numbers(column, feature["column"])
            blocks.append(((x - feature["mean"]) / feature["scale"])[:, None])
        else:  # one-hot; an unseen value matches no category → all zeros
            categories = np.array(feature["categories"], dtype=object)
            blocks.append((_strings(column)[:, None] == categories[None, :]).astype(np.float64))
    return np.hstack(blocks)


def feature_names(features: Sequence[dict]) -> list[str]:
    """Output column names: ``column`` for a numeric feature, ``column=category`` per category."""
    names: list[str] = []
    for f in features:
        if f["kind"] == "numeric":
            names.append(f["column"])
        else:
            names.extend(f"{f['column']}={c}" for c in f["categories"])
    return names


def _fields(spec: dict | None) -> list[tuple[dict, int]]:
    """The features that own columns of φ, with their widths."""
    found = []
    for feature in (spec or {}).get("features", []):
        width = 1 if feature["kind"] == "numeric" else len(feature["categories"])
        if width:
            found.append((feature, width))
    return found


def field_blocks(spec: dict | None) -> tuple[list[str], np.ndarray]:
    """The fields of φ and the first output column of each (a categorical field owns one
    column per category, in ``feature_names`` order; one without categories owns none and is
    left out): the one rule for which columns of φ — and of Σ — belong to which field. Empty
    for a space without a feature map."""
    fields = _fields(spec)
    widths = np.array([w for _, w in fields], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(widths)[:-1]]) if widths.size else widths
    return [f["column"] for f, _ in fields], starts.astype(np.int64)


def field_levels(spec: dict | None) -> np.ndarray:
    """Per field of :func:`field_blocks`: whether its columns are one-hot levels (two
    records' difference there sums to 0)."""
    return np.array([f["kind"] == "categorical" for f, _ in _fields(spec)], dtype=bool)


def feature_map_json(spec: dict) -> bytes:
    """A specification as stable JSON bytes: sorted keys, UTF-8 (the same map, the same bytes;
    the body of ``/api/studies/{id}/feature-map/`` and the source of its ETag)."""
    return json.dumps(spec, sort_keys=True, ensure_ascii=False).encode("utf-8")


class FeatureMapFit:
    """φ fitted a chunk of records at a time (the worker's import of a large table): numeric
    columns with scikit-learn's ``StandardScaler.partial_fit`` (exact for any chunking up to
    rounding; one chunk is ``fit``), categorical ones as the sorted set of their values (what
    ``OneHotEncoder`` finds). ``max_categories``: a categorical column with more distinct values
    raises ``ValueError`` (one dimension per value). ``spec()`` is the JSON specification.

    Raises ``ValueError`` for a column named twice or missing, no features at all, or a bad
    numeric value (naming the column and row).
    """

    def __init__(
        self,
        *,
        numeric: Sequence[str],
        categorical: Sequence[str],
        excluded: Sequence[str] = (),
        max_categories: int | None = None,
    ):
        from sklearn.preprocessing import StandardScaler

        self.numeric, self.categorical = list(numeric), list(categorical)
        self.excluded = list(excluded)
        named = self.numeric + self.categorical + self.excluded
        twice = sorted({c for c in named if named.count(c) > 1})
        if twice:
            raise ValueError(f"column {twice[0]!r} is given more than one role")
        if not self.numeric and not self.categorical:
            raise ValueError("choose at least one numeric or categorical column")
        self.max_categories = max_categories
        self.scaler = StandardScaler() if self.numeric else None
        self.categories: dict[str, set[str]] = {c: set() for c in self.categorical}
        self.rows = 0

    def update(self, frame: pd.DataFrame) -> None:
        for name in self.numeric + self.categorical + self.excluded:
            _column(frame, name)
        if len(frame) == 0:
            return
        if self.scaler is not None:
            x = np.column_stack([_numbers(frame[c], c) for c in self.numeric])
            self.scaler.partial_fit(x)
        for name in self.categorical:
            seen = self.categories[name]
            seen.update(pd.unique(_strings(frame[name])))
            if self.max_categories is not None and len(seen) > self.max_categories:
                raise ValueError(
                    f"column {name!r} has more than {self.max_categories:,} distinct values "
                    "(TABLE_MAX_CATEGORIES): make it numeric or excluded"
                )
        self.rows += len(frame)

    def spec(self) -> dict:
        if self.rows == 0:
            raise ValueError("the table has no rows")
        features: list[dict] = []
        if self.scaler is not None:
            features += [
                {"column": c, "kind": "numeric", "mean": float(m), "scale": float(s)}
                for c, m, s in zip(self.numeric, self.scaler.mean_, self.scaler.scale_, strict=True)
            ]
        features += [
            {"column": c, "kind": "categorical", "categories": sorted(self.categories[c])}
            for c in self.categorical
        ]
        spec = {
            "format": FEATURE_MAP_FORMAT,
            "version": FEATURE_MAP_VERSION,
            "features": features,
            "excluded": self.excluded,
            "feature_names": feature_names(features),
        }
        return validate_feature_map(spec)


def build_feature_map(
    frame: pd.DataFrame,
    *,
    numeric: Sequence[str],
    categorical: Sequence[str],
    excluded: Sequence[str] = (),
) -> dict:
    """Fit φ on ``frame`` (:class:`FeatureMapFit` in one chunk) and return its specification.

    Raises ``ValueError`` for a column named twice or missing, no features at all, or a bad
    numeric value (naming the column and row).
    """
    fit = FeatureMapFit(numeric=numeric, categorical=categorical, excluded=excluded)
    fit.update(frame)
    return fit.spec()


def validate_feature_map(spec) -> dict:
    """Check a specification; return it unchanged, or raise ``ValueError`` naming the problem."""
    if not isinstance(spec, dict):
        raise ValueError("a feature map is a JSON object")
    if spec.get("format") != FEATURE_MAP_FORMAT:
        raise ValueError(f"format must be {FEATURE_MAP_FORMAT!r}, not {spec.get('format')!r}")
    if spec.get("version") != FEATURE_MAP_VERSION:
        raise ValueError(f"unsupported feature-map version {spec.get('version')!r}")
    features = spec.get("features")
    if not isinstance(features, list) or not features:
        raise ValueError("features must be a non-empty list")
    seen: set[str] = set()
    for i, f in enumerate(features):
        if not isinstance(f, dict) or not isinstance(f.get("column"), str):
            raise ValueError(f"feature {i}: needs a column name")
        column = f["column"]
        if column in seen:
            raise ValueError(f"feature {i}: column {column!r} appears twice")
        seen.add(column)
        if f.get("kind") == "numeric":
            mean, scale = f.get("mean"), f.get("scale")
            if not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in (mean, scale)
            ):
                raise ValueError(f"feature {column!r}: mean and scale must be numbers")
            if not (math.isfinite(mean) and math.isfinite(scale) and scale > 0):
                raise ValueError(f"feature {column!r}: mean must be finite and scale positive")
        elif f.get("kind") == "categorical":
            cats = f.get("categories")
            if not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
                raise ValueError(f"feature {column!r}: categories must be a list of strings")
            if len(set(cats)) != len(cats):
                raise ValueError(f"feature {column!r}: a category appears twice")
        else:
            raise ValueError(f"feature {column!r}: kind must be one of {KINDS}")
    excluded = spec.get("excluded", [])
    if not isinstance(excluded, list) or not all(isinstance(c, str) for c in excluded):
        raise ValueError("excluded must be a list of column names")
    if seen & set(excluded):
        raise ValueError(
            f"column {sorted(seen & set(excluded))[0]!r} is both a feature and excluded"
        )
    if spec.get("feature_names") != feature_names(features):
        raise ValueError("feature_names do not match the features")
    return spec
