"""A model's score file: stored as uploaded, its head checked in the web request, every row read
and checked in the worker, a chunk at a time.

The file (CSV or Parquet, read by ``spaces.tables`` within its bounds: ``MAX_TABLE_MB`` as
uploaded, ``TABLE_MAX_*`` as decoded) has a column ``key`` and a numeric ``score``, and optionally
``decision`` (any labels, e.g. 0/1 or approve/deny; at most ``MAX_DECISIONS`` different ones).
Every key must be an item of the study's pool — unknown keys are listed — except in a record
space, where rows whose keys are unknown and that carry every field of the space's feature map φ
are **new records**, embedded with the stored φ (``spaces.records.featuremap.apply_feature_map``).
Every problem raises :class:`common.errors.InvalidInput` (a file too large: ``PayloadTooLarge``)
naming the row.

**Bounded by what it decodes to.** At most ``AUDIT_MAX_ROWS`` rows, and the worker's working
memory for them — rows × (3·dimension + 24·k) × 8 bytes (:func:`decoded_bytes`) — at most
``AUDIT_MAX_DECODED_MB``. A Parquet file declares its rows in
its footer, so the request refuses it at once; a CSV's rows are counted by the worker as it reads.

**Where.** The request (:func:`predictions_check`) reads only the head (``spaces.tables.table_head``:
a CSV's first ``PREFLIGHT_KB``, a Parquet file's footer and first batch), with the same checks the
worker makes on every chunk (:class:`_Reader`), so a small file's mistakes are a 400 at once and
nothing is stored. The worker (:func:`audit_input`) reads the stored file a chunk at a time and
keeps arrays only: item ids and matrix rows, scores, decision codes, the new records' keys, φ
vectors and row numbers. Their fields are read back from the file for the stored violations only
(:class:`NewRecords`): nothing per record is stored beside the upload. Rows whose keys are
counterfactual twins of pool items (``{of}~{column}={value}``, ``learning.audits.twins``) are
kept apart from the items and the new records (:class:`learning.audits.twins.TwinCollector`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
from django.conf import settings

from annotation.models import Study
from annotation.setup.pool import unknown_keys
from common import storage
from common.errors import AppError, InvalidInput, PayloadTooLarge
from common.text import invisible, text_problem
from learning.audits.pool import PoolIndex
from learning.audits.twins import SEP, TwinCollector, TwinScores
from learning.models import ModelAudit
from spaces.exceptions import InputFileError
from spaces.records.featuremap import apply_feature_map
from spaces.tables import table_chunks, table_head

FORMATS = ("csv", "parquet")
MAX_KEY = 255
MAX_DECISION = 50
MAX_DECISIONS = 1000
SHOWN = 5
_VISIBLE_START = r"[0-9A-Za-z]"  # a value starting so is visibly not empty (no per-value check)


def decoded_bytes(rows: int, dimension: int, k: int) -> int:
    """The worker's working memory for an audit of ``rows`` items, calibrated on the worst case
    (``benchmarks/audit_upload.py``: identical points, random scores, so that each of the n·k
    neighbour pairs is a violation; 794 MB measured at 275,036 rows, d = 41, k = 10, this formula
    801 MB): per item its points (φ and φW, float64 and the search's float32 copies, three
    numbers a dimension) and per neighbour pair 24 numbers (the two graphs, the violating pairs,
    their order and the bootstrap's work)."""
    return rows * (3 * dimension + 24 * k) * 8


def _bound(rows: int, study: Study, k: int, *, so_far: bool = False) -> None:
    """Refuse ``rows`` beyond the bounds (``so_far``: rows counted while reading)."""
    counted = f"{'at least ' if so_far else ''}{rows:,}"
    if rows > settings.AUDIT_MAX_ROWS:
        raise InvalidInput(
            f"The score file has {counted} rows; at most {settings.AUDIT_MAX_ROWS:,} "
            "(AUDIT_MAX_ROWS)."
        )
    dimension = study.space.dimension
    limit = settings.AUDIT_MAX_DECODED_MB * 2**20
    if decoded_bytes(rows, dimension, k) > limit:
        most = limit // decoded_bytes(1, dimension, k)
        raise PayloadTooLarge(
            f"The score file has {counted} rows; "
            f"in this {dimension}-dimensional space at k = {k} an audit holds at most {most:,} "
            f"(AUDIT_MAX_DECODED_MB = {settings.AUDIT_MAX_DECODED_MB:,} MB of points and "
            "neighbour pairs in the worker)."
        )


@dataclass
class NewRecords:
    """The fields of the new records, read back from the stored file when asked: ``rows`` are
    their row numbers in the file (1 = the first record), ``fields`` the columns other than key,
    score and decision."""

    path: str
    fmt: str
    fields: list[str]
    rows: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return int(self.rows.size)

    def __getitem__(self, position: int) -> dict:
        return self.fields_of([position])[position]

    def fields_of(self, positions) -> dict[int, dict]:
        """The fields of the new records at ``positions`` (0-based among the new records), read
        in one pass over the file."""
        wanted = {int(self.rows[p]): int(p) for p in positions if int(p) not in self._cache}
        if wanted:
            for chunk in table_chunks(self.path, self.fmt):
                chunk.columns = [str(c).strip() for c in chunk.columns]
                picked = chunk.loc[chunk.index.intersection(list(wanted))]
                if picked.empty:
                    continue
                records = json.loads(
                    picked[self.fields].to_json(orient="records", force_ascii=False)
                )
                for row, record in zip(picked.index.tolist(), records, strict=True):
                    self._cache[wanted[row]] = record
        return {int(p): self._cache.get(int(p), {}) for p in positions}


def new_record_fields(records, positions) -> dict[int, dict]:
    """The fields of new records by position: from :class:`NewRecords` (read back from the file)
    or from a list (a test's own ``Predictions``)."""
    if isinstance(records, NewRecords):
        return records.fields_of(positions)
    return {int(p): records[int(p)] for p in positions}


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
    new_records: NewRecords | list
    twins: TwinScores | None = None  # counterfactual twins, kept apart (learning.audits.twins)

    @property
    def count(self) -> int:
        return int(self.scores.size)


def _rows(rows: np.ndarray) -> str:
    """Row numbers as the file counts them (the header is not a row), the first few."""
    shown = ", ".join(str(int(r)) for r in rows[:SHOWN])
    return shown + (f" and {rows.size - SHOWN} more" if rows.size > SHOWN else "")


def _texts(column: pd.Series, what: str, limit: int) -> np.ndarray:
    """The column as stripped text, checked (per value only where a pattern flags it)."""
    values = column.astype(object).where(column.notna(), "").astype(str).str.strip()
    unsure = ~values.str.match(_VISIBLE_START).to_numpy(dtype=bool)
    empty = np.zeros(len(values), dtype=bool)
    empty[unsure] = values[unsure].map(invisible).to_numpy(dtype=bool)
    empty = np.flatnonzero(empty)
    if empty.size:
        raise InvalidInput(f"Row {_rows(column.index.to_numpy()[empty])}: the {what} is empty.")
    flagged = (values.str.len() > limit).to_numpy(dtype=bool)
    if text_problem("".join(values.tolist())):  # some value has one: find which
        flagged |= values.map(lambda v: text_problem(v) is not None).to_numpy(dtype=bool)
    for label, value in values[flagged].items():
        problem = text_problem(value)
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


class _Reader:
    """The checks of every row, a chunk at a time in file order, and what they keep."""

    def __init__(self, study: Study, columns: list[str], k: int):
        self.study, self.k = study, k
        columns = [str(c).strip() for c in columns]
        missing = [c for c in ("key", "score") if c not in columns]
        if missing:
            raise InvalidInput(
                f"The score file needs the columns key and score (and optionally decision); "
                f"missing: {', '.join(missing)}."
            )
        self.fields = [c for c in columns if c not in ("key", "score", "decision")]
        self.has_decision = "decision" in columns
        self.total = 0
        self.seen: set[str] = set()
        self.labels: dict[str, int] = {}
        self.known: list[tuple] = []  # (item ids, matrix rows, scores, codes) per chunk
        self.known_keys: list[str] = []  # the pool items' keys, in the order of ``known``
        self.twins = TwinCollector(study)
        self.pool = PoolIndex(study)
        self.new: list[tuple] = []  # (keys, vectors, scores, codes, file rows) per chunk

    def add(self, frame: pd.DataFrame) -> None:
        frame.columns = [str(c).strip() for c in frame.columns]
        self.total += len(frame)
        _bound(self.total, self.study, self.k, so_far=True)
        keys = _texts(frame["key"], "key", MAX_KEY)
        self._unique(keys, frame.index.to_numpy())
        scores = _scores(frame["score"])
        codes = self._codes(frame) if self.has_decision else np.zeros(len(frame), np.int64)
        ids, rows_ = self.pool.find(keys)
        known = ids >= 0
        self.known.append((ids[known], rows_[known], scores[known], codes[known]))
        self.known_keys.extend(keys[known].tolist())
        twin = np.zeros(len(keys), dtype=bool)
        maybe = [k for k in keys[~known] if SEP in k]
        if maybe:  # counterfactual twins: their originals looked up in the pool with them
            asked = np.array(sorted(self.twins.candidates(maybe)), dtype=object)
            pool = self.pool.mapping(keys, ids, rows_) | self.pool.mapping(
                asked, *self.pool.find(asked)
            )
            twin = self.twins.take(keys, frame.index.to_numpy(), scores, codes, pool) & ~known
        unknown = np.flatnonzero(~known & ~twin)
        if unknown.size:
            vectors = self._embed(frame, unknown, keys)
            rows = frame.index.to_numpy()[unknown].astype(np.int64)
            self.new.append((list(keys[unknown]), vectors, scores[unknown], codes[unknown], rows))

    def _unique(self, keys: np.ndarray, rows: np.ndarray) -> None:
        duplicated = pd.Series(keys).duplicated(keep=False).to_numpy()
        if duplicated.any():
            raise InvalidInput(
                f"A key appears more than once (rows {_rows(rows[duplicated])}): "
                f"{keys[duplicated][0]!r}."
            )
        again = np.array([k in self.seen for k in keys], dtype=bool)
        if again.any():
            raise InvalidInput(
                f"A key appears more than once (row {_rows(rows[again])} and an earlier row): "
                f"{keys[again][0]!r}."
            )
        self.seen.update(keys.tolist())

    def _codes(self, frame: pd.DataFrame) -> np.ndarray:
        texts = _texts(frame["decision"], "decision", MAX_DECISION)
        for label in dict.fromkeys(texts.tolist()):
            if label not in self.labels:
                if len(self.labels) >= MAX_DECISIONS:
                    raise InvalidInput(
                        f"The decision column has more than {MAX_DECISIONS:,} different values; "
                        "a decision is a label such as 0/1 or approve/deny."
                    )
                self.labels[label] = len(self.labels)
        return np.array([self.labels[t] for t in texts], dtype=np.int64)

    def _embed(self, frame: pd.DataFrame, unknown: np.ndarray, keys) -> np.ndarray:
        """φ of the rows whose keys are not in the pool, when the space is a record space and
        the file has every field φ reads; else the refusal listing the unknown keys."""
        spec = self.study.space.feature_map
        listed = [str(keys[i]) for i in unknown]
        if not spec:
            raise unknown_keys(listed, "(not in this study's item pool)")
        absent = [f["column"] for f in spec["features"] if f["column"] not in frame.columns]
        if absent:
            raise unknown_keys(
                listed,
                "(not in this study's item pool; to audit new records, give every field of the "
                f"space's feature map — missing: {', '.join(absent[:SHOWN])})",
            )
        try:
            return apply_feature_map(spec, frame.iloc[unknown])
        except ValueError as exc:
            raise InvalidInput(f"New records: {exc}.") from None

    def finish(self, path: str, fmt: str) -> Predictions:
        if self.total <= self.k:
            raise InvalidInput(
                f"The file scores {self.total} item(s); k = {self.k} neighbours need at least "
                f"{self.k + 1}."
            )
        order = sorted(self.labels, key=self.labels.get)
        sorted_labels = sorted(order)
        recode = np.array([sorted_labels.index(label) for label in order], dtype=np.int64)
        dimension = self.study.space.dimension
        parts = list(zip(*self.known, strict=True)) if self.known else [[]] * 4
        new = list(zip(*self.new, strict=True)) if self.new else [[], [], [], [], []]

        def joined(arrays, dtype) -> np.ndarray:
            return np.concatenate(arrays).astype(dtype) if len(arrays) else np.zeros(0, dtype)

        codes = joined([*parts[3], *new[3]], np.int64)
        position = {key: n for n, key in enumerate(self.known_keys)}
        return Predictions(
            item_ids=joined(parts[0], np.int64),
            rows=joined(parts[1], np.int64),
            scores=joined([*parts[2], *new[2]], np.float64),
            decisions=recode[codes] if self.has_decision else None,
            decision_labels=sorted_labels,
            new_keys=[k for keys in new[0] for k in keys],
            new_vectors=(
                np.vstack(new[1]).astype(np.float64) if new[1] else np.zeros((0, dimension))
            ),
            new_records=NewRecords(path, fmt, self.fields, joined(new[4], np.int64)),
            twins=self.twins.placed(position, recode, self.has_decision),
        )


def predictions_check(*, study: Study, path: str | Path, fmt: str, k: int) -> tuple:
    """Check a score file's head as the request may read it (the bounds a Parquet footer
    declares, the columns, the first rows as the worker will check every row). Returns the row
    count when known without reading further (None: the worker counts) and whether the file has
    decisions."""
    try:
        head = table_head(path, fmt)
    except InputFileError as exc:
        raise InvalidInput(f"The score file: {exc}.") from None
    if head.total_rows is not None:
        _bound(head.total_rows, study, k)
    reader = _Reader(study, head.columns, k)
    reader.add(head.frame)
    if head.total_rows == len(head.frame):  # the head is the whole file
        reader.finish(str(path), fmt)
    return head.total_rows, reader.has_decision


def predictions_read(*, study: Study, path: str | Path, fmt: str, k: int, progress=None):
    """Every row of a stored score file, checked (see the module docstring); ``progress(share)``
    is called after each chunk (it renews the worker's lease)."""
    try:
        total = table_head(path, fmt, rows=1).total_rows
        reader = None
        for chunk in table_chunks(path, fmt):
            reader = reader or _Reader(study, list(chunk.columns), k)
            reader.add(chunk)
            if progress is not None:
                progress(reader.total / total if total else 0.5)
    except InputFileError as exc:
        raise InvalidInput(f"The score file: {exc}.") from None
    if reader is None:
        raise InvalidInput("The score file: the file has a header but no rows.")
    return reader.finish(str(path), fmt)


def audit_input(audit, files: contextlib.ExitStack, progress=None) -> Predictions:
    """The stored score file of ``audit``, read and checked in the worker; its counts written
    on the audit. A problem raises ``ValueError`` with the reason (the audit fails, saying it).
    The file is read from a local path (a copy when media are in a bucket) that ``files``
    keeps until it closes: new records' fields are read back from it later."""
    fmt = PurePosixPath(audit.predictions.name).suffix.lstrip(".")
    if fmt not in FORMATS:
        name = PurePosixPath(audit.predictions.name).name
        raise ValueError(f"the stored score file {name!r} is in no format an audit reads")
    path = files.enter_context(storage.readable_path(audit.predictions.name))
    try:
        data = predictions_read(study=audit.study, path=path, fmt=fmt, k=audit.k, progress=progress)
    except AppError as exc:
        raise ValueError(exc.message) from None
    ModelAudit.objects.filter(pk=audit.pk).update(
        item_count=data.count,
        new_records=len(data.new_keys),
        has_decision=data.decisions is not None,
    )
    return data


def audit_vectors(audit: ModelAudit, data: Predictions) -> np.ndarray:
    """The audited points: the pool items' φ, then the new records'."""
    space = audit.study.space
    known = space.vectors(data.rows)
    if data.new_vectors.size:  # rounded as the space's own vectors were stored
        dtype = space.load_matrix().dtype
        return np.vstack([known, data.new_vectors.astype(dtype).astype(np.float64)])
    return known
