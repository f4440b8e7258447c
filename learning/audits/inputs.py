"""A model's score file, read and checked in the web request, kept as a small ``.npz``.

The file (CSV or Parquet, read by ``spaces.tables``, bounded by ``MAX_TABLE_MB`` and
``AUDIT_MAX_ROWS``) has a column ``key`` and a numeric ``score``, and optionally ``decision``
(any labels, e.g. 0/1 or approve/deny). Every key must be an item of the study's pool — unknown
keys are listed and nothing is written — except in a record space, where rows whose keys are
unknown and that carry every field of the space's feature map φ are **new records**, embedded
with the stored φ (``spaces.records.featuremap.apply_feature_map``). Every problem raises
:class:`common.errors.InvalidInput` (a file too large: ``PayloadTooLarge``) naming the row.
"""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from django.conf import settings

from annotation.models import Study
from annotation.selectors import pool_items
from annotation.setup.pool import unknown_keys
from common.errors import InvalidInput, PayloadTooLarge
from common.text import invisible, text_problem
from learning.audits.twins import TwinScores, twins_resolve
from spaces.exceptions import InputFileError
from spaces.records.featuremap import apply_feature_map
from spaces.tables import guess_format, max_table_bytes, read_table

FORMATS = ("csv", "parquet")
MAX_KEY = 255
MAX_DECISION = 50
SHOWN = 5


@dataclass(frozen=True)
class Predictions:
    """Checked scores: the pool's items first (``item_ids``, their matrix ``rows``), then new
    records (``new_keys``, their φ ``new_vectors`` and fields ``new_records``). ``decisions``:
    integer codes into ``decision_labels``, or None."""

    item_ids: np.ndarray
    rows: np.ndarray
    scores: np.ndarray
    decisions: np.ndarray | None
    decision_labels: list[str]
    new_keys: list[str]
    new_vectors: np.ndarray
    new_records: list[dict]
    twins: TwinScores | None = None  # counterfactual twins, kept apart (learning.audits.twins)

    @property
    def count(self) -> int:
        return int(self.scores.size)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            item_ids=self.item_ids,
            rows=self.rows,
            scores=self.scores,
            decisions=self.decisions if self.decisions is not None else np.zeros(0, np.int64),
            has_decisions=np.array(self.decisions is not None),
            decision_labels=np.array(self.decision_labels, dtype=str),
            new_keys=np.array(self.new_keys, dtype=str),
            new_vectors=self.new_vectors,
            new_records=np.array(json.dumps(self.new_records)),
            **(self.twins.arrays() if self.twins is not None else {}),
        )
        return buffer.getvalue()

    @classmethod
    def from_file(cls, handle) -> Predictions:
        with np.load(handle, allow_pickle=False) as data:
            return cls(
                item_ids=data["item_ids"],
                rows=data["rows"],
                scores=data["scores"],
                decisions=data["decisions"] if bool(data["has_decisions"]) else None,
                decision_labels=[str(v) for v in data["decision_labels"]],
                new_keys=[str(v) for v in data["new_keys"]],
                new_vectors=data["new_vectors"],
                new_records=json.loads(str(data["new_records"])),
                twins=TwinScores.from_arrays(data),
            )


def _rows(rows: np.ndarray) -> str:
    """Row numbers as the file counts them (the header is not a row), the first few."""
    shown = ", ".join(str(int(r)) for r in rows[:SHOWN])
    return shown + (f" and {rows.size - SHOWN} more" if rows.size > SHOWN else "")


def _read(upload) -> pd.DataFrame:
    if upload.size is not None and upload.size > max_table_bytes():
        raise PayloadTooLarge(f"The file is larger than {settings.MAX_TABLE_MB} MB.")
    if not upload.size:
        raise InvalidInput("The file is empty.")
    try:
        fmt = guess_format(upload.name or "", FORMATS)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"predictions.{fmt}"
            with open(path, "wb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
            frame = read_table(path, fmt)
    except InputFileError as exc:
        raise InvalidInput(f"The score file: {exc}.") from None
    if len(frame) > settings.AUDIT_MAX_ROWS:
        raise InvalidInput(
            f"The score file has {len(frame):,} rows; at most {settings.AUDIT_MAX_ROWS:,}."
        )
    missing = [c for c in ("key", "score") if c not in frame.columns]
    if missing:
        raise InvalidInput(
            f"The score file needs the columns key and score (and optionally decision); "
            f"missing: {', '.join(missing)}."
        )
    return frame


def _texts(column: pd.Series, what: str, limit: int) -> np.ndarray:
    values = column.astype(object).where(column.notna(), "").astype(str).str.strip()
    empty = np.flatnonzero(values.map(invisible).to_numpy(dtype=bool))
    if empty.size:
        raise InvalidInput(f"Row {_rows(column.index.to_numpy()[empty])}: the {what} is empty.")
    for label, value in values.items():
        problem = text_problem(value)
        if problem or len(value) > limit:
            raise InvalidInput(
                f"Row {label}: the {what} {problem or f'is longer than {limit} characters'}."
            )
    return values.to_numpy(dtype=object)


def _scores(column: pd.Series) -> np.ndarray:
    raw = column.map(lambda v: v.strip() if isinstance(v, str) else v)
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        first = column.iloc[int(bad[0])]
        raise InvalidInput(
            f"Row {_rows(column.index.to_numpy()[bad])}: the score must be a finite number "
            f"(row {column.index[int(bad[0])]} has {first!r})."
        )
    return values


def _new_records(study: Study, frame: pd.DataFrame, unknown: np.ndarray, keys) -> tuple:
    """φ and fields of the rows whose keys are not in the pool, when the space is a record space
    and the file has every field φ reads; else the refusal listing the unknown keys."""
    space = study.space
    spec = space.feature_map
    unknown_list = [str(keys[i]) for i in unknown]
    if not spec:
        raise unknown_keys(unknown_list, "(not in this study's item pool)")
    needed = [f["column"] for f in spec["features"]]
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        raise unknown_keys(
            unknown_list,
            "(not in this study's item pool; to audit new records, give every field of the "
            f"space's feature map — missing: {', '.join(absent[:SHOWN])})",
        )
    rows = frame.iloc[unknown]
    try:
        vectors = apply_feature_map(spec, rows)
    except ValueError as exc:
        raise InvalidInput(f"New records: {exc}.") from None
    fields = [c for c in frame.columns if c not in ("key", "score", "decision")]
    records = json.loads(rows[fields].to_json(orient="records", force_ascii=False))
    return unknown_list, vectors, records


def predictions_read(*, study: Study, upload) -> Predictions:
    """The checked scores of ``upload`` for ``study`` (see the module docstring)."""
    frame = _read(upload)
    keys = _texts(frame["key"], "key", MAX_KEY)
    duplicated = pd.Series(keys).duplicated(keep=False).to_numpy()
    if duplicated.any():
        rows = frame.index.to_numpy()[duplicated]
        raise InvalidInput(
            f"A key appears more than once (rows {_rows(rows)}): {keys[duplicated][0]!r}."
        )
    scores = _scores(frame["score"])
    decisions, labels = None, []
    if "decision" in frame.columns:
        texts = _texts(frame["decision"], "decision", MAX_DECISION)
        uniques, decisions = np.unique(texts.astype(str), return_inverse=True)
        labels = [str(v) for v in uniques]
    pool = {
        key: (pk, row) for key, pk, row in pool_items(study=study).values_list("key", "id", "row")
    }
    known = np.array([k in pool for k in keys], dtype=bool)
    twins = twins_resolve(study=study, keys=keys, pool=pool)  # counterfactual twins: kept apart
    unknown = np.flatnonzero(~known & ~twins.mask)
    new_keys, new_vectors, new_records = [], np.zeros((0, study.space.dimension)), []
    if unknown.size:
        new_keys, new_vectors, new_records = _new_records(study, frame, unknown, keys)
    found = np.array([pool[k] for k in keys[known]], dtype=np.int64).reshape(-1, 2)
    order = np.concatenate([np.flatnonzero(known), unknown])
    return Predictions(
        item_ids=found[:, 0].copy(),
        rows=found[:, 1].copy(),
        scores=scores[order],
        decisions=None if decisions is None else decisions[order].astype(np.int64),
        decision_labels=labels,
        new_keys=new_keys,
        new_vectors=np.asarray(new_vectors, dtype=np.float64),
        new_records=new_records,
        twins=twins.placed(order, keys, scores, decisions),
    )
