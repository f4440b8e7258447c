"""Reading the study set-up files: item keys, candidate pairs and gold pairs.

Accepted: CSV, TSV (a tab in the first line), JSONL (lines starting with ``{`` or ``"``), or
pasted text. Keys: one per row (the ``key`` column when there is a header, else the first
column); pasted text may also separate keys by commas or tabs. Pairs: ``key_a,key_b`` (gold:
``key_a,key_b,label``), a header row optional; JSONL objects ``{"key_a":…, "key_b":…,
"label":…}``. Every problem raises :class:`common.errors.InvalidInput` naming the line — bytes
that are not UTF-8, and keys with NUL or a lone surrogate (the guard of form input,
:func:`common.text.text_problem`) among them; nothing is read from disk twice and nothing is
written here.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from django.conf import settings

from common.errors import InvalidInput, PayloadTooLarge
from common.text import text_problem

MAX_KEY = 255
GOLD_LABELS = {"comparable": "comparable", "incomparable": "incomparable"}
LABEL_ALIASES = {"1": "comparable", "0": "incomparable", "yes": "comparable", "no": "incomparable"}


@dataclass(frozen=True)
class PairRow:
    line: int
    key_a: str
    key_b: str
    label: str = ""


def read_upload(upload) -> str:
    """An uploaded file as text (UTF-8, a BOM allowed), refused over SETUP_UPLOAD_MAX_MB."""
    return decode(read_upload_bytes(upload))


def read_upload_bytes(upload) -> bytes:
    """An uploaded file's bytes, refused over SETUP_UPLOAD_MAX_MB."""
    limit = settings.SETUP_UPLOAD_MAX_MB * 1024 * 1024
    if upload.size is not None and upload.size > limit:
        raise PayloadTooLarge(f"The file is larger than {settings.SETUP_UPLOAD_MAX_MB} MB.")
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"The file is larger than {settings.SETUP_UPLOAD_MAX_MB} MB.")
    return data


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InvalidInput(
            f"Line {line}: the file is not UTF-8 text (byte {error.start}); save it as UTF-8 "
            "CSV, TSV or JSONL."
        ) from None


def _lines(text: str) -> list[tuple[int, str]]:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InvalidInput("The file is empty: no rows.")
    if len(lines) > settings.SETUP_UPLOAD_MAX_ROWS:
        raise InvalidInput(f"At most {settings.SETUP_UPLOAD_MAX_ROWS:,} rows per upload.")
    return lines


def _is_jsonl(lines) -> bool:
    return lines[0][1].lstrip().startswith(("{", '"'))


def _json(line: int, raw: str):
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the decoder
        raise InvalidInput(f"Line {line}: not valid JSON.") from None


def _csv_rows(lines) -> list[tuple[int, list[str]]]:
    delimiter = "\t" if "\t" in lines[0][1] else ","
    rows = []
    for n, raw in lines:
        try:
            cells = next(csv.reader(io.StringIO(raw), delimiter=delimiter))
        except (csv.Error, StopIteration):
            raise InvalidInput(f"Line {n}: not a valid CSV row.") from None
        rows.append((n, [c.strip() for c in cells]))
    return rows


def _key(line: int, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"Line {line}: an empty or non-text item key.")
    problem = text_problem(value)
    if problem:
        raise InvalidInput(f"Line {line}: an item key {problem}.")
    value = value.strip()
    if len(value) > MAX_KEY:
        raise InvalidInput(f"Line {line}: an item key has at most {MAX_KEY} characters.")
    return value


def parse_keys(text: str, *, pasted: bool = False) -> list[str]:
    """Item keys, in order, without duplicates."""
    lines = _lines(text)
    keys: list[str] = []
    if _is_jsonl(lines):
        for n, raw in lines:
            value = _json(n, raw)
            if isinstance(value, dict):
                value = value.get("key")
            keys.append(_key(n, value))
    elif pasted:
        for n, cells in _csv_rows(lines):
            keys += [_key(n, c) for c in cells if c]
    else:
        rows = _csv_rows(lines)
        column = 0
        header = [c.lower() for c in rows[0][1]]
        if "key" in header:
            column = header.index("key")
            rows = rows[1:]
        for n, cells in rows:
            keys.append(_key(n, cells[column] if column < len(cells) else ""))
    if not keys:
        raise InvalidInput("The file lists no item keys.")
    return list(dict.fromkeys(keys))


def _label(line: int, value) -> str:
    text = str(value).strip().lower() if value is not None else ""
    label = GOLD_LABELS.get(text) or LABEL_ALIASES.get(text)
    if label is None:
        raise InvalidInput(
            f"Line {line}: the label must be comparable or incomparable (or 1/0), "
            f"got {str(value)[:40]!r}."
        )
    return label


def parse_pairs(text: str, *, labelled: bool) -> list[PairRow]:
    """Pairs of keys (with a gold label when ``labelled``); self pairs refused."""
    lines = _lines(text)
    width = 3 if labelled else 2
    rows: list[PairRow] = []
    if _is_jsonl(lines):
        for n, raw in lines:
            value = _json(n, raw)
            if not isinstance(value, dict):
                raise InvalidInput(f"Line {n}: expected an object with key_a and key_b.")
            label = _label(n, value.get("label")) if labelled else ""
            rows.append(PairRow(n, _key(n, value.get("key_a")), _key(n, value.get("key_b")), label))
    else:
        parsed = _csv_rows(lines)
        if [c.lower() for c in parsed[0][1][:2]] == ["key_a", "key_b"]:
            parsed = parsed[1:]
        for n, cells in parsed:
            if len(cells) != width:
                want = "key_a,key_b,label" if labelled else "key_a,key_b"
                raise InvalidInput(
                    f"Line {n}: expected {width} columns ({want}), got {len(cells)}."
                )
            label = _label(n, cells[2]) if labelled else ""
            rows.append(PairRow(n, _key(n, cells[0]), _key(n, cells[1]), label))
    if not rows:
        raise InvalidInput("The file lists no pairs.")
    for row in rows:
        if row.key_a == row.key_b:
            raise InvalidInput(f"Line {row.line}: a pair needs two different items.")
    return rows
