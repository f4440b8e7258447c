"""Parquet read with bounds: the footer first, then small batches.

The footer (metadata) gives the row count, the columns and their types, and the size the data
decompresses to: a file beyond ``TABLE_MAX_ROWS``, ``TABLE_MAX_COLUMNS`` or
``TABLE_MAX_DECODED_MB`` is refused before any data is decoded (a 30 KB file of 4,000,000 rows
is refused after reading its footer). Batches are then read ``chunk_rows`` at a time. Text
columns are read dictionary-encoded where the file is, so a long value repeated on every row is
checked once, and its decoded size counted, before it is expanded.

Rules for the values: numbers, booleans, dates and times as they are; text as text; **binary
columns are decoded as UTF-8 text**, and a value that is not UTF-8 is refused naming its column
and row (so is a value with NUL, or longer than ``TABLE_MAX_CELL_CHARS``); nested values (lists,
structs, maps) are refused naming the column.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from common.text import bytes_text, without_paths
from spaces.exceptions import InputFileError
from spaces.tables.checks import DecodedBudget, cell_error, column_names, limits, too_many_rows


def _open(path: str | Path, **options) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(str(path), **options)
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = without_paths(str(exc))[:200]
        raise InputFileError(f"not a readable Parquet file ({reason})") from None


def _texty(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or _binary(kind)


def _binary(kind: pa.DataType) -> bool:
    return (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
    )


class ParquetTable:
    """An opened Parquet file whose footer passed the bounds: ``columns`` (checked names),
    ``rows`` (the row count it declares)."""

    def __init__(self, path: str | Path):
        bound = limits()
        footer = _open(path)
        meta = footer.metadata
        schema = footer.schema_arrow
        pandas_index = set()
        if schema.pandas_metadata:  # pandas stores a non-default index as extra columns
            pandas_index = {
                c for c in schema.pandas_metadata.get("index_columns", []) if isinstance(c, str)
            }
        fields = [f for f in schema if f.name not in pandas_index]
        self.columns = column_names([f.name for f in fields])
        self.rows = meta.num_rows
        if self.rows > bound.rows:
            raise InputFileError(
                f"the file has {self.rows:,} rows; at most {bound.rows:,} (TABLE_MAX_ROWS)"
            )
        if self.rows == 0:
            raise InputFileError("the file has a header but no rows")
        decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        DecodedBudget().add(decoded)
        for field in fields:
            if pa.types.is_nested(field.type):
                raise InputFileError(
                    f"the column {field.name.strip()!r} holds {field.type} values; a record's "
                    "cells are numbers, text, booleans, dates or times"
                )
        self._names = [f.name for f in fields]
        texty = [f.name for f in fields if _texty(f.type)]
        self._file = _open(path, read_dictionary=texty)
        self._budget = DecodedBudget()

    def chunks(self, chunk_rows: int) -> Iterator[pd.DataFrame]:
        """The rows, ``chunk_rows`` at a time, as DataFrames indexed by row number (1-based)."""
        done = 0
        try:
            batches = self._file.iter_batches(batch_size=chunk_rows, columns=self._names)
            for batch in batches:
                arrays = [
                    self._column(array, name, done + 1)
                    for array, name in zip(batch.columns, self.columns, strict=True)
                ]
                frame = pa.RecordBatch.from_arrays(arrays, names=self.columns).to_pandas()
                frame.index = pd.RangeIndex(done + 1, done + 1 + len(frame))
                done += len(frame)
                if done > limits().rows:
                    raise too_many_rows()
                yield frame
        except (pa.ArrowException, OSError) as exc:
            reason = without_paths(str(exc))[:200]
            raise InputFileError(f"not a readable Parquet file ({reason})") from None

    def _column(self, array: pa.Array, name: str, first: int) -> pa.Array:
        """A column of one batch, its text checked and counted, dictionary and binary decoded."""
        if pa.types.is_dictionary(array.type):
            if _texty(array.type.value_type):
                values = self._text(array.dictionary, name, first, rows=array.indices)
                lengths = pc.binary_length(values).fill_null(0)
                self._budget.add(pc.sum(pc.take(lengths, array.indices)).as_py() or 0)
                return pa.DictionaryArray.from_arrays(array.indices, values).dictionary_decode()
            return array.dictionary_decode()
        if _texty(array.type):
            values = self._text(array, name, first)
            self._budget.add(pc.sum(pc.binary_length(values)).as_py() or 0)
            return values
        return array

    @staticmethod
    def _text(values: pa.Array, name: str, first: int, rows: pa.Array | None = None) -> pa.Array:
        """``values`` as checked UTF-8 text. ``rows``: dictionary indices, to name the first row
        that holds a bad dictionary value."""

        def refuse(at: int, problem: str) -> InputFileError:
            if rows is not None:  # the first row of the batch holding that dictionary value
                at = pc.index(rows, pa.scalar(at, rows.type)).as_py()
                if at < 0:  # no row of this batch holds it: the file does, somewhere
                    return InputFileError(f"a value in column {name!r} {problem}")
            return cell_error(problem, column=name, line=first + at, unit="row")

        as_bytes = values.cast(pa.binary()) if not _binary(values.type) else values
        try:
            text = values if not _binary(values.type) else as_bytes.cast(pa.string())
            text.validate(full=True)
        except pa.ArrowInvalid:
            for at, raw in enumerate(as_bytes.to_pylist()):
                if raw is not None and bytes_text(raw)[1]:
                    raise refuse(at, bytes_text(raw)[1]) from None
            raise
        limit = limits().cell_chars
        too_long = pc.greater(pc.utf8_length(text), limit).fill_null(False)
        if pc.any(too_long).as_py():
            at = pc.index(too_long, True).as_py()
            raise refuse(at, f"is longer than {limit:,} characters (TABLE_MAX_CELL_CHARS)")
        nul = pc.match_substring(text, "\x00").fill_null(False)
        if pc.any(nul).as_py():
            raise refuse(pc.index(nul, True).as_py(), "contains a NUL character")
        return text.cast(pa.large_string()) if pa.types.is_large_binary(values.type) else text
