"""Record spaces: a table (CSV or Parquet) whose rows are the items; vectors are φ(records).

``record_space_create`` is the one way a record space is made — by the upload pages and by
code (the Adult demo): it builds the declared feature map with :mod:`spaces.records.featuremap`,
embeds every record with it, and stores the space, its items (each keeping its record's
original field values as JSON, for display) and the map's JSON specification, atomically.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item
from spaces.records.columns import hidden_columns_check
from spaces.records.featuremap import apply_feature_map, build_feature_map
from spaces.services import MAX_KEY, Progress, space_from_matrix


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """Each row as a JSON-ready dict (numpy scalars → Python, NaN → None, dates as ISO)."""
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    return json.loads(frame.to_json(orient="records", date_format="iso", double_precision=15))


def record_keys(frame: pd.DataFrame, key_column: str | None) -> list[str]:
    """Item keys: the key column's values (stripped, unique, non-empty), else ``row 1``, …"""
    if not key_column:
        return [f"row {i}" for i in range(1, len(frame) + 1)]
    if key_column not in frame.columns:
        raise EmbeddingFormatError(f"no column {key_column!r} for the keys")
    keys = [str(v).strip() for v in frame[key_column].tolist()]
    for i, key in enumerate(keys, start=1):
        if not key or key == "nan" or len(key) > MAX_KEY:
            raise EmbeddingFormatError(f"row {i}: the key in {key_column!r} is empty or too long")
    return keys


def record_space_create(
    *,
    name: str,
    frame: pd.DataFrame,
    numeric: Sequence[str],
    categorical: Sequence[str],
    excluded: Sequence[str] = (),
    label_column: str = "",
    hidden_columns: Sequence[str] | None = None,
    owner=None,
    key_column: str | None = None,
    source: str = "",
    progress: Progress | None = None,
) -> EmbeddingSpace:
    """Create a record space from ``frame``; atomic (nothing stored on any error).

    ``label_column`` (if given) is added to ``excluded``: it never enters φ. Every column of
    the frame is kept in each item's record; ``hidden_columns`` are the ones annotators do not
    see (``EmbeddingSpace.shown_payload``), by default the label column alone — whether a
    column enters φ and whether annotators see it are two independent choices. Raises :class:`EmbeddingFormatError` with one
    readable line (unknown column, bad value with its column and row, duplicate name or key).
    """
    excluded = list(excluded)
    if label_column and label_column not in excluded:
        excluded.append(label_column)
    if len(frame) == 0:
        raise EmbeddingFormatError("the table has no rows")
    hidden = hidden_columns_check(list(frame.columns), label_column, hidden_columns)
    try:
        spec = build_feature_map(frame, numeric=numeric, categorical=categorical, excluded=excluded)
        matrix = apply_feature_map(spec, frame)
    except ValueError as exc:
        raise EmbeddingFormatError(str(exc)) from None
    keys = record_keys(frame, key_column)
    who = getattr(owner, "username", None) or "code"
    return space_from_matrix(
        name=name,
        matrix=matrix,
        keys=keys,
        space_kind=EmbeddingSpace.Kind.RECORDS,
        item_kind=Item.Kind.RECORD,
        source=source or f"{len(frame)} records by {who}; φ: {matrix.shape[1]} features",
        payloads=frame_records(frame),
        feature_map=spec,
        label_column=label_column,
        hidden_columns=hidden,
        progress=progress,
        owner=owner if getattr(owner, "pk", None) else None,
    )
