"""Export formats: Sigma as .npy / JSON / CSV, judgments and groups as streamed CSV / JSONL /
Parquet.

Every function here is a read. The judgment and group exports are generators over
``iterator(chunk_size=…)`` querysets, so a study with a million judgments streams in constant
memory (on PostgreSQL through a server-side cursor) and the first bytes leave at once.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.models import Adjudication, ComparableGroup, PairJudgment, Study
from learning.models import MetricVersion

CHUNK_SIZE = 5000
GROUP_CHUNK_SIZE = 500

JUDGMENT_FIELDS = [
    "id",
    "study_id",
    "item_a_id",
    "item_a_key",
    "item_b_id",
    "item_b_key",
    "label",
    "reasons",  # the fields that decided the answer: a list (CSV: joined by "; ")
    "annotator_id",
    "annotator",
    "source",
    "provenance",
    "client_id",
    "elapsed_ms",
    "is_gold",
    "created_at",
]
GROUP_FIELDS = [
    "group_id",
    "study_id",
    "name",
    "created_by_id",
    "created_by",
    "source",
    "provenance",
    "revision",
    "created_at",
    "updated_at",
    "item_id",
    "item_key",
]


# --- Sigma --------------------------------------------------------------------------------------


def sigma_bytes(version: MetricVersion) -> bytes:
    """The stored ``.npy`` file as it is (its sha256 is ``version.sigma_sha256``)."""
    with version.sigma.open("rb") as handle:
        return handle.read()


def sigma_array(version: MetricVersion) -> np.ndarray:
    return np.load(io.BytesIO(sigma_bytes(version)), allow_pickle=False)


def sigma_json(version: MetricVersion) -> bytes:
    """``{"version", "dimension", "sha256", "sigma": [[…]]}``; floats round-trip exactly."""
    sigma = sigma_array(version)
    payload = {
        "version": version.pk,
        "method": version.method,
        "dimension": int(sigma.shape[0]),
        "sha256": version.sigma_sha256,
        "sigma": sigma.tolist(),
    }
    return json.dumps(payload).encode("utf-8")


def sigma_csv(version: MetricVersion) -> bytes:
    """d lines of d comma-separated numbers, 17 significant digits (exact for float64)."""
    sigma = sigma_array(version)
    out = io.StringIO()
    np.savetxt(out, np.atleast_2d(sigma), delimiter=",", fmt="%.17g")
    return out.getvalue().encode("ascii")


# --- Judgments and groups -------------------------------------------------------------------


def _iso(value) -> str:
    return value.isoformat() if value is not None else ""


def judgment_rows(*, study: Study) -> Iterator[dict]:
    """Every judgment of the study, oldest first, with annotator, timestamps and provenance."""
    queryset = (
        PairJudgment.objects.filter(study=study)
        .order_by("id")
        .values_list(
            "id",
            "study_id",
            "item_a_id",
            "item_a__key",
            "item_b_id",
            "item_b__key",
            "label",
            "reasons",
            "annotator_id",
            "annotator__username",
            "source",
            "provenance",
            "client_id",
            "elapsed_ms",
            "is_gold",
            "created_at",
        )
    )
    for row in queryset.iterator(chunk_size=CHUNK_SIZE):
        record = dict(zip(JUDGMENT_FIELDS, row, strict=True))
        record["client_id"] = str(record["client_id"])
        record["created_at"] = _iso(record["created_at"])
        record["reasons"] = list(record["reasons"] or [])
        yield record


ADJUDICATION_SOURCE = "adjudication"  # the source of an adjudication's row in the export


def adjudication_rows(*, study: Study) -> Iterator[dict]:
    """The study's adjudications in the judgments export's columns, after the answers: the
    decided label, the reviewer who decided as the annotator, source ``adjudication``, no id
    (an adjudication is no answer; ``provenance`` names it: ``adjudication #7``)."""
    queryset = (
        Adjudication.objects.filter(study=study)
        .order_by("id")
        .values_list(
            "id",
            "item_a_id",
            "item_a__key",
            "item_b_id",
            "item_b__key",
            "label",
            "decided_by_id",
            "decided_by__username",
            "created_at",
        )
    )
    for pk, a, a_key, b, b_key, label, who, name, at in queryset.iterator(chunk_size=CHUNK_SIZE):
        row = dict.fromkeys(JUDGMENT_FIELDS)
        row |= {
            "study_id": study.pk,
            "item_a_id": a,
            "item_a_key": a_key,
            "item_b_id": b,
            "item_b_key": b_key,
            "label": label,
            "annotator_id": who,
            "annotator": name,
            "source": ADJUDICATION_SOURCE,
            "provenance": f"adjudication #{pk}",
            "client_id": "",
            "is_gold": False,
            "created_at": _iso(at),
        }
        yield row


def group_rows(*, study: Study) -> Iterator[dict]:
    """Every comparable group of the study with its members (``members``: list of items)."""
    queryset = (
        ComparableGroup.objects.filter(study=study)
        .select_related("created_by")
        .prefetch_related("members")
        .order_by("id")
    )
    for group in queryset.iterator(chunk_size=GROUP_CHUNK_SIZE):
        members = sorted(group.members.all(), key=lambda item: item.pk)
        yield {
            "group_id": group.pk,
            "study_id": group.study_id,
            "name": group.name,
            "created_by_id": group.created_by_id,
            "created_by": group.created_by.username if group.created_by else None,
            "source": group.source,
            "provenance": group.provenance,
            "revision": group.revision,
            "created_at": _iso(group.created_at),
            "updated_at": _iso(group.updated_at),
            "members": [{"item_id": item.pk, "item_key": item.key} for item in members],
        }


def group_member_rows(*, study: Study) -> Iterator[dict]:
    """One row per (group, member) for CSV; a group without members gives one empty row."""
    for group in group_rows(study=study):
        members = group.pop("members") or [{"item_id": None, "item_key": None}]
        for member in members:
            yield {**group, **member}


class _Echo:
    """A file-like object whose ``write`` returns the string, for csv.writer streaming."""

    def write(self, value: str) -> str:
        return value


# A spreadsheet treats a cell starting with one of these as a formula (=HYPERLINK(…) would be a
# live link, =cmd|… worse); tab and CR start one in some importers too.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> object:
    """``value`` safe for a spreadsheet: text starting a formula gets a leading ``'`` (OWASP);
    numbers, and None as the empty cell, stay as they are; a list (an answer's reasons) is one
    cell, its items joined by "; "."""
    if value is None:
        return ""
    if isinstance(value, list):
        value = "; ".join(str(v) for v in value)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def stream_csv(rows: Iterable[dict], fields: list[str]) -> Iterator[str]:
    """Every CSV export: a header and one line per row, each cell through :func:`csv_cell`."""
    writer = csv.writer(_Echo())
    yield writer.writerow([csv_cell(f) for f in fields])
    for row in rows:
        yield writer.writerow([csv_cell(row[f]) for f in fields])


def stream_jsonl(rows: Iterable[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


# --- Parquet ------------------------------------------------------------------------------------

PARQUET_ROWS = 20_000  # rows per row group: the stream yields one row group at a time


def _parquet_schema(fields: list[str]):
    types = {
        "id": pa.int64(),
        "study_id": pa.int64(),
        "item_a_id": pa.int64(),
        "item_b_id": pa.int64(),
        "annotator_id": pa.int64(),
        "elapsed_ms": pa.int64(),
        "is_gold": pa.bool_(),
        "group_id": pa.int64(),
        "created_by_id": pa.int64(),
        "revision": pa.int64(),
        "item_id": pa.int64(),
        "reasons": pa.list_(pa.string()),
    }
    return pa.schema([(name, types.get(name, pa.string())) for name in fields])


class _Sink(io.RawIOBase):
    """A write-only buffer the Parquet writer fills and the stream drains."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def drain(self) -> bytes:
        out, self.chunks = b"".join(self.chunks), []
        return out


def stream_parquet(rows: Iterable[dict], fields: list[str]) -> Iterator[bytes]:
    """The same columns as the CSV, as a Parquet file written one row group at a time."""
    schema = _parquet_schema(fields)
    sink = _Sink()
    writer = pq.ParquetWriter(sink, schema)
    batch: list[dict] = []

    def flush() -> None:
        columns = {f: [row[f] for row in batch] for f in fields}
        writer.write_table(pa.table(columns, schema=schema))
        batch.clear()

    for row in rows:
        batch.append(row)
        if len(batch) >= PARQUET_ROWS:
            flush()
            yield sink.drain()
    if batch:
        flush()
    writer.close()
    yield sink.drain()
