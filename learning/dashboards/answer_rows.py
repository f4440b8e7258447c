"""A study's answers as integer rows for the dashboard's figures, and their count and checksum.

Every judgment of the study (people's and imported) crosses into numpy as nine int64 columns
(``COLUMNS``) through PostgreSQL's binary ``COPY`` (110-byte rows parsed by one
``np.frombuffer``; other databases fetch the rows). ``read_rows`` reads the rows with
``after < id <= upto``: all of them for a full computation, the new ones since the last refresh
for the figures' tallies (``learning/dashboards/tallies.py``).

``study_marks`` is one aggregate over the same rows: how many there are, the highest id and the
sum of ``CHECK_TERMS`` over them, which ``checksum`` computes in numpy from the rows read. The
tallies kept up to a watermark are trusted only when their count and checksum plus the new
rows' equal the database's: a deleted answer changes the count; an edited one (label, items,
annotator, source, time taken, gold flag or day) changes its row's term, which is its id
(modulo a prime, plus one) times a weighted sum of its other columns (modulo the prime).
"""

from __future__ import annotations

import io

import numpy as np
from django.db import connection

from annotation.models import Label, LabelCode, PairJudgment, Source

COLUMNS = ("id", "annotator", "item_a", "item_b", "label", "source", "elapsed", "gold", "day")
ID, ANNOTATOR, ITEM_A, ITEM_B, LABEL, SOURCE, ELAPSED, GOLD, DAY = range(len(COLUMNS))
# annotator -1: none (imported); label: LabelCode; source: index in SOURCES; elapsed -1: not
# timed; gold 0/1; day: the UTC date of created_at, in days since 1970-01-01.
LABELS = sorted(Label, key=LabelCode.of)  # index = LabelCode
SOURCES = list(Source)  # index = source code
CHECK_MOD = 65521  # a prime: each column enters the checksum modulo it
# (column, weight, shift): a row's term is (id % M + 1) * (1 + Σ weight · ((col + shift) % M)).
CHECK_TERMS = (
    (ANNOTATOR, 3, 1),
    (ITEM_A, 5, 0),
    (ITEM_B, 7, 0),
    (LABEL, 11, 0),
    (SOURCE, 13, 0),
    (ELAPSED, 17, 1),
    (GOLD, 19, 0),
    (DAY, 23, 0),
)
_COPY_HEADER = 19  # PGCOPY signature (11), flags (4), header extension length (4)
_ROW = np.dtype(
    [("n", ">i2")] + [(f"f{i}", [("len", ">i4"), ("v", ">i8")]) for i in range(len(COLUMNS))]
)


def _day_sql() -> str:
    if connection.vendor == "postgresql":
        return "CAST(CAST(created_at AT TIME ZONE 'UTC' AS DATE) - DATE '1970-01-01' AS BIGINT)"
    # SQLite keeps timestamps as ISO text in UTC: the first ten characters are the date.
    return "CAST(julianday(substr(created_at, 1, 10)) - 2440587.5 AS INTEGER)"


def rows_query(study_id: int, after: int, upto: int) -> tuple[str, list]:
    """SQL and parameters of the study's rows (``COLUMNS``) with ``after < id <= upto``; an
    unknown label or source reads as NULL (``read_rows`` refuses it)."""
    table = connection.ops.quote_name(PairJudgment._meta.db_table)
    labels = " ".join(f"WHEN %s THEN {code}" for code in range(len(LABELS)))
    sources = " ".join(f"WHEN %s THEN {code}" for code in range(len(SOURCES)))
    sql = (
        f"SELECT CAST(id AS BIGINT) AS id, CAST(COALESCE(annotator_id, -1) AS BIGINT) AS "
        f"annotator, CAST(item_a_id AS BIGINT) AS item_a, CAST(item_b_id AS BIGINT) AS item_b, "
        f"CAST(CASE label {labels} END AS BIGINT) AS label, "
        f"CAST(CASE source {sources} END AS BIGINT) AS source, "
        f"CAST(COALESCE(elapsed_ms, -1) AS BIGINT) AS elapsed, "
        f"CAST(CASE WHEN is_gold THEN 1 ELSE 0 END AS BIGINT) AS gold, {_day_sql()} AS day "
        f"FROM {table} WHERE study_id = %s AND id > %s AND id <= %s"
    )
    params = [*(label.value for label in LABELS), *(source.value for source in SOURCES)]
    return sql, [*params, study_id, after, upto]


def read_rows(study_id: int, after: int = 0, upto: int = 2**62) -> np.ndarray:
    """The study's judgments with ``after < id <= upto``: an (n, 9) int64 array (``COLUMNS``)."""
    sql, params = rows_query(study_id, after, upto)
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchall()
        if any(value is None for row in found for value in row):
            raise ValueError("an answer with an unknown label or source")
        return np.array(found, dtype=np.int64).reshape(-1, len(COLUMNS))
    connection.ensure_connection()
    raw = connection.connection  # psycopg 3: COPY binds its parameters on the client
    buffer = io.BytesIO()
    with (
        raw.cursor() as cursor,
        cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy,
    ):
        for block in copy:
            buffer.write(block)
    data = buffer.getbuffer()
    extension = int.from_bytes(data[15:19], "big")
    body = data[_COPY_HEADER + extension : len(data) - 2]  # without the trailer (int16 -1)
    rows = np.frombuffer(body, dtype=_ROW)
    if not all((rows[f"f{i}"]["len"] == 8).all() for i in range(len(COLUMNS))):
        raise ValueError("an answer with an unknown label or source")
    return np.stack([rows[f"f{i}"]["v"] for i in range(len(COLUMNS))], axis=1).astype(np.int64)


def checksum(rows: np.ndarray) -> int:
    """The sum of the rows' checksum terms (module docstring), as ``study_marks`` sums them."""
    if rows.shape[0] == 0:
        return 0
    inner = np.ones(rows.shape[0], dtype=np.int64)
    for column, weight, shift in CHECK_TERMS:
        inner += weight * ((rows[:, column] + shift) % CHECK_MOD)
    return int(np.sum((rows[:, ID] % CHECK_MOD + 1) * inner, dtype=np.int64))


def study_marks(study_id: int) -> tuple[int, int, int]:
    """(judgments, highest id, checksum) of the study: one aggregate over ``rows_query``."""
    sql, params = rows_query(study_id, 0, 2**62)
    m = CHECK_MOD
    inner = " + ".join(
        f"{weight} * ((r.{COLUMNS[column]} + {shift}) %% {m})"
        for column, weight, shift in CHECK_TERMS
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*), COALESCE(MAX(r.id), 0), "
            f"COALESCE(SUM((r.id %% {m} + 1) * (1 + {inner})), 0) FROM ({sql}) r",
            params,
        )
        count, top, check = cursor.fetchone()
    return int(count), int(top), int(check)
