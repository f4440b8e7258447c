"""CSV (UTF-8, comma or tab) read record by record with bounds.

Lines are decoded one at a time (an undecodable byte names its line), every cell is checked
(NUL, length; :mod:`spaces.tables.checks`) and a record with another number of fields than the
header names its line. :func:`csv_chunks` yields DataFrames of text cells (``dtype=object``;
empty cells stay ``""``) indexed by record number (1 = the first record); :func:`csv_head` reads
at most ``max_bytes`` from the start of the file — the header and the first records — for the
web request.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd

from spaces.exceptions import InputFileError
from spaces.tables.checks import (
    cell_error,
    cell_problem,
    chunk_rows,
    column_names,
    limits,
    too_many_rows,
)


class _Lines:
    """A binary file's lines as text for the csv module: decoded one by one (the first line's
    byte-order mark dropped), remembering whether the record being read held NUL or enough text
    for a cell over the limit (then its cells are checked one by one; most records never are)."""

    def __init__(self, raw: Iterable[bytes], cell_chars: int):
        self.raw = raw
        self.cell_chars = cell_chars
        self.number = 0
        self.chars = 0  # characters read since the last record
        self.nul = False

    @property
    def suspect(self) -> bool:
        return self.nul or self.chars > self.cell_chars

    def record_done(self) -> None:
        self.chars, self.nul = 0, False

    def __iter__(self) -> Iterator[str]:
        for raw in self.raw:
            self.number += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError("the file is not UTF-8 text", line=self.number) from None
            if self.number == 1:
                text = text.removeprefix("\ufeff")
            self.chars += len(text)
            self.nul = self.nul or "\x00" in text
            yield text


def _delimiter(first_line: str) -> str:
    return "\t" if first_line.count("\t") > first_line.count(",") else ","


def csv_records(raw: Iterable[bytes], *, truncated: bool = False) -> Iterator[tuple[int, list]]:
    """``(line, cells)`` for the header (first) and every non-blank record of CSV bytes given as
    lines; every problem an :class:`InputFileError` naming its line. ``truncated``: the bytes are
    the start of a longer file, so a record cut at the end is left out rather than refused."""
    bound = limits()
    lines = _Lines(raw, bound.cell_chars)
    texts = iter(lines)
    first = next(texts, None)
    if first is None or not first.strip():
        raise InputFileError("the file is empty")
    delimiter = _delimiter(first)
    rows = csv.reader(_chain(first, texts), delimiter=delimiter, strict=True, skipinitialspace=True)
    width = None
    header: list[str] = []
    try:
        for row in rows:
            suspect = lines.suspect
            lines.record_done()
            if not row:
                continue  # a blank line
            if suspect and width is not None:  # (the header's names: column_names checks them)
                for name, cell in zip(header, row, strict=False):
                    problem = cell_problem(cell)
                    if problem:
                        raise cell_error(problem, column=str(name).strip(), line=rows.line_num)
            if width is None:
                width, header = len(row), row
            elif len(row) != width:
                raise InputFileError(
                    f"{len(row)} fields where the header has {width}", line=rows.line_num
                )
            yield rows.line_num, row
    except csv.Error as exc:
        if truncated:
            return  # the last record runs past the bytes read: the worker reads it
        raise InputFileError(f"malformed CSV ({exc})", line=rows.line_num) from None


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def _frame(rows: list[list[str]], columns: list[str], first: int) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=columns, dtype=object)
    frame.index = pd.RangeIndex(first, first + len(rows))
    return frame


def csv_chunks(path: str | Path, rows: int | None = None) -> Iterator[pd.DataFrame]:
    """The records of a CSV file, ``rows`` at a time (default: :func:`chunk_rows` of its width;
    at most ``TABLE_MAX_ROWS`` in all)."""
    max_rows = limits().rows
    with open(path, "rb") as f:
        records = csv_records(f)
        columns = column_names(next(records)[1])
        per_chunk = rows or chunk_rows(len(columns))
        chunk: list[list[str]] = []
        done = 0
        for _, row in records:
            chunk.append(row)
            if done + len(chunk) > max_rows:
                raise too_many_rows()
            if len(chunk) == per_chunk:
                yield _frame(chunk, columns, done + 1)
                done += len(chunk)
                chunk = []
        if chunk or not done:
            yield _frame(chunk, columns, done + 1)


def csv_head(path: str | Path, rows: int, max_bytes: int) -> tuple[pd.DataFrame, bool]:
    """The first ``rows`` records of a CSV file, reading at most ``max_bytes``; and whether the
    file was read to its end (then the frame holds all of its records, if ``rows`` allow)."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    truncated = len(data) > max_bytes
    if truncated:
        data = data[: data.rfind(b"\n", 0, max_bytes) + 1]
    too_long = InputFileError(
        f"the header and the first record do not fit in {max_bytes // 1024} KB (PREFLIGHT_KB)"
    )
    if not data.strip():
        raise too_long if truncated else InputFileError("the file is empty")
    records = csv_records(io.BytesIO(data), truncated=truncated)
    columns = column_names(next(records)[1])
    body = []
    for _, row in records:
        body.append(row)
        if len(body) > rows:
            return _frame(body[:rows], columns, 1), False
    if truncated and not body:
        raise too_long
    if len(body) > limits().rows:
        raise too_many_rows()
    return _frame(body, columns, 1), not truncated
