"""Reading uploaded tables for record and text spaces: CSV (UTF-8), Parquet and JSONL, bounded.

Nothing is decoded in full before the bounds are checked: a Parquet file's footer gives its row
count, columns and decompressed size (``parquetfile``); CSV (``csvfile``) and JSONL (``jsonl``)
are read record by record. Every table keeps to ``TABLE_MAX_ROWS``, ``TABLE_MAX_COLUMNS``,
``TABLE_MAX_CELL_CHARS`` and ``TABLE_MAX_DECODED_MB``, and every name and text cell passes the
guard of form input (``checks``: NUL, lone surrogates, undecodable bytes), each problem an
:class:`~spaces.exceptions.InputFileError` naming the line or row and the column.

* :func:`table_head` — the columns and first rows, as the web request may read them (CSV: at
  most ``PREFLIGHT_KB``; Parquet: the footer and the first batch);
* :func:`table_chunks` — every row, a chunk of rows at a time (the worker);
* :func:`read_table` — the whole (checked) table in memory, for text uploads.

CSV cells are read as text (``dtype=object``, empty cells stay ``""``) and numbers are recognised
per column afterwards, so what a record displays is what the file said. Frames are indexed by
record number (1 = the first record), which errors name as ``row``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from django.conf import settings

from spaces.exceptions import InputFileError
from spaces.tables.checks import MAX_COLUMN_NAME, chunk_rows, column_names
from spaces.tables.csvfile import csv_chunks, csv_head
from spaces.tables.jsonl import jsonl_chunks, jsonl_objects
from spaces.tables.parquetfile import ParquetTable

__all__ = [
    "MAX_COLUMN_NAME",
    "TABLE_FORMATS",
    "TEXT_FORMATS",
    "TableHead",
    "chunk_rows",
    "guess_format",
    "jsonl_objects",
    "max_table_bytes",
    "read_table",
    "table_chunks",
    "table_head",
]

TABLE_FORMATS = ("csv", "parquet")
TEXT_FORMATS = ("csv", "jsonl")
HEAD_ROWS = 1000  # rows the web request reads to guess columns and show the first values


def max_table_bytes() -> int:
    return settings.MAX_TABLE_MB * 1024 * 1024


def guess_format(name: str, allowed: tuple[str, ...]) -> str:
    suffix = Path(name or "").suffix.lower().lstrip(".")
    suffix = {"pq": "parquet", "ndjson": "jsonl", "tsv": "csv", "txt": "csv"}.get(suffix, suffix)
    if suffix not in allowed:
        raise InputFileError(
            f"cannot tell the format of {name!r}: name it .{' or .'.join(allowed)}"
        )
    return suffix


def _exists(path: str | Path) -> Path:
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        raise InputFileError("the uploaded file is gone; upload it again") from None
    if size > max_table_bytes():
        raise InputFileError(f"the file is larger than {settings.MAX_TABLE_MB} MB (MAX_TABLE_MB)")
    if size == 0:
        raise InputFileError("the file is empty")
    return path


@dataclass(frozen=True)
class TableHead:
    """A table's checked column names, its first rows, and its row count when known without
    reading further (Parquet: from the footer; CSV: when the whole file was read)."""

    columns: list[str]
    frame: pd.DataFrame
    total_rows: int | None


def table_head(path: str | Path, fmt: str, rows: int = HEAD_ROWS) -> TableHead:
    """The header and the first ``rows`` rows, read within the web request's bounds."""
    path = _exists(path)
    if fmt == "parquet":
        table = ParquetTable(path)
        frame = next(table.chunks(rows))
        return TableHead(table.columns, frame, table.rows)
    if fmt == "csv":
        frame, complete = csv_head(path, rows, settings.PREFLIGHT_KB * 1024)
        if complete and frame.empty:
            raise InputFileError("the file has a header but no rows")
        return TableHead(list(frame.columns), frame, len(frame) if complete else None)
    frame = next(table_chunks(path, fmt, rows))
    return TableHead(column_names(list(frame.columns)), frame, None)


def table_chunks(path: str | Path, fmt: str, rows: int | None = None) -> Iterator[pd.DataFrame]:
    """Every row of the table, ``rows`` at a time (default: :func:`chunk_rows` of its width)."""
    path = _exists(path)
    if fmt == "parquet":
        table = ParquetTable(path)
        yield from table.chunks(rows or chunk_rows(len(table.columns)))
    elif fmt == "csv":
        yield from csv_chunks(path, rows)
    else:
        yield from jsonl_chunks(path, rows or 5000)


def read_table(path: str | Path, fmt: str) -> pd.DataFrame:
    """The whole table, every bound checked (text uploads: at most ``TABLE_MAX_ROWS`` short
    texts); raises :class:`InputFileError` for an empty table."""
    frames = list(table_chunks(path, fmt))
    frame = pd.concat(frames) if len(frames) > 1 else frames[0]
    frame.columns = column_names(list(frame.columns))
    if len(frame) == 0:
        raise InputFileError("the file has a header but no rows")
    return frame
