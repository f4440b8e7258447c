"""Typed values of an uploaded CSV: a column whose every non-empty cell is a number written the
way JSON writes it back is stored as numbers, so that the data browser compares and sorts them
(``age:>=30``); any other column keeps its text.

A CSV is read as text (``spaces.tables``), and a record displays what the file said. So a cell is
a number here only when storing it as one changes nothing a reader sees: ``39``, ``-2``,
``75.04``, but not ``007`` (a code: its zeros would be lost), ``1.50`` or ``1e3`` (written back
as ``1.5`` and ``1000.0``), nor integers of more than 15 digits (beyond what a JSON reader keeps
exactly). Empty cells become null. :class:`NumberColumns` finds such columns a chunk at a time
(the worker's first pass), :meth:`NumberColumns.typed` converts a chunk's cells before it is
stored. Parquet columns are typed by the file already; φ reads the text as before.
"""

from __future__ import annotations

import math
import re

import pandas as pd

INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,14})")
DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
MAX_DIGITS = 15  # a float's significant digits that JSON (double_precision=15) keeps


def number_of(text) -> int | float | None:
    """The number a cell's text stands for when storing it as one changes nothing, else None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if INTEGER.fullmatch(text):
        return int(text)
    if DECIMAL.fullmatch(text):
        value = float(text)
        digits = len(text.lstrip("-").replace(".", "").lstrip("0"))
        if math.isfinite(value) and repr(value) == text and digits <= MAX_DIGITS:
            return value
    return None


def _cell(text):
    if not isinstance(text, str) or not text.strip():
        return None
    return number_of(text)


class NumberColumns:
    """The columns of a CSV read chunk by chunk whose cells are all numbers or empty (and at
    least one a number)."""

    def __init__(self):
        self.failed: set[str] = set()
        self.seen: set[str] = set()
        self.columns: list[str] = []

    def update(self, chunk: pd.DataFrame) -> None:
        if not self.columns:
            self.columns = [str(c) for c in chunk.columns]
        for name in chunk.columns:
            name = str(name)
            if name in self.failed:
                continue
            for cell in pd.unique(chunk[name].to_numpy(dtype=object)):
                if isinstance(cell, str) and not cell.strip():
                    continue  # empty: null
                if _cell(cell) is None:
                    self.failed.add(name)
                    break
                self.seen.add(name)

    @property
    def numbers(self) -> list[str]:
        return [c for c in self.columns if c in self.seen and c not in self.failed]

    def typed(self, chunk: pd.DataFrame) -> pd.DataFrame:
        """A copy of ``chunk`` whose number columns hold numbers (empty cells None)."""
        numbers = set(self.numbers)
        if not numbers:
            return chunk
        frame = chunk.copy()
        for name in frame.columns:
            if str(name) in numbers:
                cells = frame[name].to_numpy(dtype=object)
                to = {v: _cell(v) for v in pd.unique(cells)}
                frame[name] = pd.Series([to[v] for v in cells], index=frame.index, dtype=object)
        return frame
