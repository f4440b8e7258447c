"""JSON lines: the one JSONL parser of uploads (text spaces) and of the feedback import, and
text uploads read from it in bounded chunks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd

from common.text import text_problem
from spaces.exceptions import InputFileError
from spaces.tables.checks import MAX_COLUMN_NAME, cell_error, cell_problem, limits, too_many_rows


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
    is the parser's reason; a line nested too deep for the decoder is one too), a JSON value
    other than an object ``error(not_object)``, each with
    its line number — the callers choose the type and words their users and tests know.
    """
    for number, text in lines:
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise error(not_json.format(exc.msg), line=number) from None
        except RecursionError:  # the decoder recurses once per level: a bracket bomb
            raise error(not_json.format("nested too deep"), line=number) from None
        if not isinstance(value, dict):
            raise error(not_object, line=number)
        yield number, value


def numbered_lines(raw: Iterable[bytes]) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of UTF-8 bytes given as lines; lines end at ``\\n``, ``\\r\\n``
    or ``\\r`` (not at the other Unicode line breaks a JSON string may hold); a byte-order mark
    on line 1 dropped; an undecodable line refused with its number."""
    number = 0
    for chunk in raw:
        ending = 2 if chunk.endswith(b"\r\n") else 1 if chunk.endswith((b"\n", b"\r")) else 0
        for line in chunk[: len(chunk) - ending].split(b"\r"):
            number += 1
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise InputFileError("the file is not UTF-8 text", line=number) from None
            yield number, text.removeprefix("\ufeff") if number == 1 else text


class _Fields:
    """The field names seen so far: each checked once, at most ``TABLE_MAX_COLUMNS`` of them."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def check(self, number: int, record: dict) -> dict:
        for name, value in record.items():
            if name not in self.seen:
                problem = text_problem(name) or (
                    f"is longer than {MAX_COLUMN_NAME} characters"
                    if len(name) > MAX_COLUMN_NAME
                    else None
                )
                if problem:
                    raise InputFileError(f"the field name {name[:40]!r} {problem}", line=number)
                self.seen.add(name)
                if len(self.seen) > limits().columns:
                    raise InputFileError(
                        f"the records have more than {limits().columns} fields (TABLE_MAX_COLUMNS)",
                        line=number,
                    )
            if isinstance(value, str):  # (nested lists and objects are never stored)
                problem = cell_problem(value)
                if problem:
                    raise cell_error(problem, column=name, line=number)
        return record


def _frame(records: list[dict], first: int) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records)
    frame.index = pd.RangeIndex(first, first + len(records))
    return frame


def jsonl_chunks(path: str | Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    """The objects of a JSONL file as DataFrames of ``chunk_rows`` records (at most
    ``TABLE_MAX_ROWS``); each chunk's columns are the fields its records have."""
    max_rows = limits().rows
    fields = _Fields()
    done, chunk = 0, []
    with open(path, "rb") as f:
        for number, record in jsonl_objects(numbered_lines(f)):
            chunk.append(fields.check(number, record))
            if done + len(chunk) > max_rows:
                raise too_many_rows()
            if len(chunk) == chunk_rows:
                yield _frame(chunk, done + 1)
                done, chunk = done + len(chunk), []
    if not done and not chunk:
        raise InputFileError("the file is empty")
    if chunk:
        yield _frame(chunk, done + 1)
