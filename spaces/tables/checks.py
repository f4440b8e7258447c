"""The bounds every uploaded table is read within, and the checks of its names and cells.

Limits come from settings (``TABLE_MAX_ROWS``, ``TABLE_MAX_COLUMNS``, ``TABLE_MAX_CELL_CHARS``,
``TABLE_MAX_DECODED_MB``); each message names the limit and its setting. Every text a table
brings — column names and cells — passes :func:`common.text.text_problem` (NUL, lone surrogates),
the guard form input passes, with the line or row and the column in the message.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from common.text import text_problem
from spaces.exceptions import InputFileError

MAX_COLUMN_NAME = 200
CHUNK_CELLS = 250_000  # cells per chunk the worker reads: rows per chunk = this / columns


@dataclass(frozen=True)
class TableLimits:
    rows: int
    columns: int
    cell_chars: int
    decoded_bytes: int


def limits() -> TableLimits:
    return TableLimits(
        rows=settings.TABLE_MAX_ROWS,
        columns=settings.TABLE_MAX_COLUMNS,
        cell_chars=settings.TABLE_MAX_CELL_CHARS,
        decoded_bytes=settings.TABLE_MAX_DECODED_MB * 1024 * 1024,
    )


def chunk_rows(columns: int) -> int:
    """Rows per chunk for a table of ``columns`` columns (at least 100, at most 20,000)."""
    return max(100, min(20_000, CHUNK_CELLS // max(1, columns)))


def too_many_rows() -> InputFileError:
    return InputFileError(
        f"the file has more than {settings.TABLE_MAX_ROWS:,} rows (TABLE_MAX_ROWS)"
    )


def column_names(raw: list) -> list[str]:
    """The stripped column names of a table, checked: at least one, at most the column limit,
    each text a database can store, non-empty, at most ``MAX_COLUMN_NAME`` characters, unique."""
    if not raw:
        raise InputFileError("the file has no columns")
    limit = settings.TABLE_MAX_COLUMNS
    if len(raw) > limit:
        raise InputFileError(
            f"the file has {len(raw)} columns; at most {limit} (TABLE_MAX_COLUMNS)"
        )
    names = []
    for position, name in enumerate(raw, start=1):
        name = str(name).strip()
        problem = text_problem(name)
        if problem:
            raise InputFileError(f"the name of column {position} {problem}")
        if not name or len(name) > MAX_COLUMN_NAME:
            raise InputFileError(
                f"the name of column {position} is empty or longer than {MAX_COLUMN_NAME}"
            )
        names.append(name)
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputFileError(f"the column {twice!r} appears twice")
    return names


def cell_problem(value: str) -> str | None:
    """Why a text cell cannot be stored, or None (too long, NUL, lone surrogate)."""
    limit = settings.TABLE_MAX_CELL_CHARS
    if len(value) > limit:
        return f"is longer than {limit:,} characters (TABLE_MAX_CELL_CHARS)"
    return text_problem(value)


def cell_error(problem: str, *, column: str, line: int, unit: str = "line") -> InputFileError:
    return InputFileError(f"the cell in column {column!r} {problem}", line=line, unit=unit)


class DecodedBudget:
    """Counts the bytes of text a table decodes to; beyond ``TABLE_MAX_DECODED_MB`` an error
    (a small compressed file of repeated long strings cannot fill the memory)."""

    def __init__(self) -> None:
        self.limit = settings.TABLE_MAX_DECODED_MB * 1024 * 1024
        self.used = 0

    def add(self, n: int) -> None:
        self.used += int(n)
        if self.used > self.limit:
            raise InputFileError(
                f"the table decodes to more than {settings.TABLE_MAX_DECODED_MB:,} MB "
                "(TABLE_MAX_DECODED_MB)"
            )
