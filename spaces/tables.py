"""Reading uploaded tables for record and text spaces: CSV (UTF-8), Parquet and JSONL.

Every reader returns a :class:`pandas.DataFrame` or raises
:class:`~spaces.exceptions.InputFileError` with one readable line (empty file, bytes that are
not UTF-8, a malformed row or JSONL line with its number, a file above ``MAX_TABLE_MB``).
CSV cells are read as text (``dtype=str``, empty cells stay ``""``) and numbers are recognised
per column afterwards, so what a record displays is what the file said.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd
from django.conf import settings

from spaces.exceptions import InputFileError

TABLE_FORMATS = ("csv", "parquet")
TEXT_FORMATS = ("csv", "jsonl")
MAX_COLUMNS = 500
MAX_COLUMN_NAME = 200


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


def _read_bytes(path: str | Path) -> bytes:
    try:
        size = Path(path).stat().st_size
    except OSError:
        raise InputFileError("the uploaded file is gone; upload it again") from None
    if size > max_table_bytes():
        raise InputFileError(f"the file is larger than {settings.MAX_TABLE_MB} MB")
    data = Path(path).read_bytes()
    if not data.strip():
        raise InputFileError("the file is empty")
    return data


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError("the file is not UTF-8 text", line=line) from None


def _checked(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.shape[1] == 0:
        raise InputFileError("the file has no columns")
    if frame.shape[1] > MAX_COLUMNS:
        raise InputFileError(f"the file has {frame.shape[1]} columns; at most {MAX_COLUMNS}")
    names = [str(c).strip() for c in frame.columns]
    for name in names:
        if not name or len(name) > MAX_COLUMN_NAME:
            raise InputFileError(f"a column name is empty or longer than {MAX_COLUMN_NAME}")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputFileError(f"the column {twice!r} appears twice")
    if len(frame) == 0:
        raise InputFileError("the file has a header but no rows")
    frame.columns = names
    frame.index = pd.RangeIndex(1, len(frame) + 1)  # errors name "row 1" for the first record
    return frame


def read_csv(path: str | Path) -> pd.DataFrame:
    """A CSV (comma, or tab for .tsv-like content sniffed from the header) as text columns."""
    text = _text(_read_bytes(path))
    first = text.split("\n", 1)[0]
    delimiter = "\t" if first.count("\t") > first.count(",") else ","
    rows = csv.reader(
        io.StringIO(text, newline=""), delimiter=delimiter, strict=True, skipinitialspace=True
    )
    try:
        header = next(rows)
        width = len(header)
        body = []
        for row in rows:
            if not row:
                continue  # blank line
            if len(row) != width:
                raise InputFileError(
                    f"{len(row)} fields where the header has {width}", line=rows.line_num
                )
            body.append(row)
    except csv.Error as exc:
        raise InputFileError(f"malformed CSV ({exc})", line=rows.line_num) from None
    return _checked(pd.DataFrame(body, columns=header, dtype=object))


def read_parquet(path: str | Path) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _read_bytes(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputFileError(f"not a readable Parquet file ({str(exc)[:200]})") from None
    return _checked(table.to_pandas())


def jsonl_objects(
    lines: Iterable[tuple[int, str]],
    *,
    error: type[InputFileError] = InputFileError,
    not_json: str = "not JSON ({})",
    not_object: str = "each line must be a JSON object",
) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of JSON lines, given as numbered text.

    The one JSONL parser of uploads (here) and of the feedback import
    (``annotation.setup.feedback_import``): a line that is not JSON raises ``error(not_json)`` (``{}``
    is the parser's reason), a JSON value other than an object ``error(not_object)``, each with
    its line number — the callers choose the type and words their users and tests know.
    """
    for number, text in lines:
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise error(not_json.format(exc.msg), line=number) from None
        if not isinstance(value, dict):
            raise error(not_object, line=number)
        yield number, value


def read_jsonl(path: str | Path) -> pd.DataFrame:
    """One JSON object per line; a line that is not one → error with its number. Lines end at
    ``\n`` (``\r\n``, ``\r``), not at the other Unicode line breaks a JSON string may hold."""
    text = _text(_read_bytes(path))
    numbered = enumerate(io.StringIO(text, newline=None), start=1)
    records = [record for _, record in jsonl_objects(numbered)]
    if not records:
        raise InputFileError("the file is empty")
    return _checked(pd.DataFrame.from_records(records))


def read_table(path: str | Path, fmt: str) -> pd.DataFrame:
    readers = {"csv": read_csv, "parquet": read_parquet, "jsonl": read_jsonl}
    return readers[fmt](path)
