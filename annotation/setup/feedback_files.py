"""Reading a feedback file (pairs or groups, CSV or JSON lines) into a checked plan — the one
parser of the ``import_feedback`` command and of the study's import page; storing the plan is
``annotation/setup/feedback_import.py`` (the formats are described there).

Everything is read and checked, keys resolved to items of the study's space, before anything is
stored; the first problem is a :class:`FeedbackFormatError` naming its line.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from annotation.models import ComparableGroup, Label, Membership, Study
from common.iterables import batched
from common.text import text_problem
from spaces.exceptions import InputFileError
from spaces.models import Item
from spaces.tables import jsonl_objects

MAX_PROVENANCE = 300
LABELS = {
    "comparable": Label.COMPARABLE,
    "1": Label.COMPARABLE,
    "true": Label.COMPARABLE,
    "yes": Label.COMPARABLE,
    "incomparable": Label.INCOMPARABLE,
    "0": Label.INCOMPARABLE,
    "false": Label.INCOMPARABLE,
    "no": Label.INCOMPARABLE,
    "unsure": Label.UNSURE,
}


class FeedbackFormatError(InputFileError):
    """A feedback file that cannot be imported."""


@dataclass(frozen=True)
class PairRow:
    line: int
    key_a: str
    key_b: str
    label: str
    item_a: int
    item_b: int
    annotator: int | None = None  # the member who answered (the file's annotator column)


@dataclass(frozen=True)
class GroupRow:
    line: int
    name: str
    keys: list[str]
    items: list[int]


@dataclass
class FeedbackPlan:
    """A whole file, checked and resolved: what storing it would write."""

    kind: str  # pairs | groups
    fmt: str  # csv | jsonl
    provenance: str
    pairs: list[PairRow] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)

    @property
    def labels(self) -> dict[str, int]:
        counts = Counter(p.label for p in self.pairs)
        return {label.value: counts.get(label.value, 0) for label in Label}

    @property
    def members(self) -> int:
        return sum(len(g.items) for g in self.groups)

    @property
    def annotators(self) -> int:
        """How many members the pairs name as their annotators (0: no annotator column)."""
        return len({p.annotator for p in self.pairs if p.annotator is not None})


def clean_provenance(provenance: str) -> str:
    provenance = (provenance or "").strip() or "imported"
    return provenance[:MAX_PROVENANCE]


def _lines(raw_lines: Iterable[bytes]) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
            yield number, text.removeprefix("\ufeff") if number == 1 else text
        except UnicodeDecodeError as exc:
            raise FeedbackFormatError(
                f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                line=number,
            ) from None


def _records(raw_lines: Iterable[bytes], fmt: str, name: str) -> Iterator[tuple[int, dict]]:
    """(line number, record) for every non-blank record of a CSV or JSON-lines file."""
    if fmt == "jsonl":
        yield from jsonl_objects(
            _lines(raw_lines),
            error=FeedbackFormatError,
            not_json="not valid JSON ({})",
            not_object="expected a JSON object",
        )
        return
    numbered = _lines(raw_lines)
    line_of = {"n": 0}

    def texts():
        for number, text in numbered:
            line_of["n"] = number
            yield text

    tsv = name.lower().endswith(".tsv")
    reader = csv.DictReader(texts(), delimiter="\t" if tsv else ",")
    try:
        header = reader.fieldnames
    except csv.Error as exc:
        raise _csv_error(exc, line_of["n"]) from None
    if header is None:
        return
    reader.fieldnames = [name.strip() for name in reader.fieldnames]
    for record in _csv_checked(reader, line_of):
        if None in record or any(v is None for v in record.values()):
            raise FeedbackFormatError(
                f"the row has a different number of columns than the header ({len(reader.fieldnames)})",
                line=line_of["n"],
            )
        if any(str(v).strip() for v in record.values()):
            yield line_of["n"], record


def _csv_checked(reader: csv.DictReader, line_of: dict) -> Iterator[dict]:
    """The reader's records; its errors (a field over ``csv.field_size_limit``, 128 KB; a NUL)
    a :class:`FeedbackFormatError` with the line."""
    try:
        yield from reader
    except csv.Error as exc:
        raise _csv_error(exc, line_of["n"]) from None


def _csv_error(error: csv.Error, line: int) -> FeedbackFormatError:
    return FeedbackFormatError(f"not a valid CSV row ({error})", line=line)


def _detect(name: str, fmt: str) -> str:
    if fmt == "auto":
        suffix = Path(name).suffix.lower()
        if suffix in {".jsonl", ".ndjson", ".json"}:
            return "jsonl"
        if suffix in {".csv", ".tsv"}:
            return "csv"
        raise FeedbackFormatError(
            f"cannot tell the format of {name}: name it .csv or .jsonl, or choose the format"
        )
    if fmt not in {"csv", "jsonl"}:
        raise FeedbackFormatError(f"unknown format {fmt!r}; choose csv, jsonl or auto")
    return fmt


def _guarded(value: str, what: str, line: int) -> str:
    problem = text_problem(value)
    if problem:
        raise FeedbackFormatError(f"{what} {problem}", line=line)
    return value


def _text(record: dict, field: str, line: int) -> str:
    value = record.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise FeedbackFormatError(f"missing {field!r}", line=line)
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise FeedbackFormatError(f"{field!r} must be a string", line=line)
    return _guarded(str(value).strip(), repr(field), line)


class _KeyIndex:
    """Item ids of the study's space by key, fetched in chunks (one query per 900 keys)."""

    def __init__(self, study: Study, keys: set[str]):
        self.space = study.space
        self.ids: dict[str, int] = {}
        items = Item.objects.filter(space=study.space)
        for chunk in batched(sorted(keys), 900):
            self.ids.update(items.filter(key__in=chunk).values_list("key", "id"))

    def get(self, key: str, line: int) -> int:
        try:
            return self.ids[key]
        except KeyError:
            raise FeedbackFormatError(
                f"unknown key {key[:80]!r} (no such item in space {self.space.name!r})", line=line
            ) from None


class _Members:
    """The study's members by username or e-mail address (any case): an imported answer's
    ``annotator`` names the member who gave it, so that it counts in agreement as theirs."""

    def __init__(self, study: Study):
        self.ids: dict[str, int] = {}
        rows = Membership.objects.filter(study=study).values_list(
            "user_id", "user__username", "user__email"
        )
        for pk, username, email in rows:
            self.ids[username.lower()] = pk
            if email:
                self.ids.setdefault(email.lower(), pk)

    def get(self, name: str, line: int) -> int:
        try:
            return self.ids[name.lower()]
        except KeyError:
            raise FeedbackFormatError(
                f"annotator {name[:80]!r} is no member of the study (add them on the members "
                "page first, or leave the cell empty)",
                line=line,
            ) from None


def _annotator(record: dict, line: int) -> str:
    """The optional ``annotator`` cell: a member's username or e-mail ("" when absent)."""
    value = record.get("annotator")
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    return _text(record, "annotator", line)


def _read_pairs(records: list[tuple[int, dict]]) -> list[tuple[int, str, str, str, str]]:
    pairs = []
    for line, record in records:
        key_a, key_b = _text(record, "key_a", line), _text(record, "key_b", line)
        raw_label = _text(record, "label", line)
        label = LABELS.get(raw_label.lower())
        if label is None:
            raise FeedbackFormatError(
                f"unknown label {raw_label[:40]!r}; use comparable, incomparable or unsure",
                line=line,
            )
        if key_a == key_b:
            raise FeedbackFormatError(f"a pair of {key_a!r} with itself", line=line)
        pairs.append((line, key_a, key_b, label, _annotator(record, line)))
    return pairs


def _read_groups(records: list[tuple[int, dict]], fmt: str) -> dict[str, list[tuple[int, str]]]:
    """Group name -> [(line, key)], in file order; checks duplicates within a group."""
    groups: dict[str, list[tuple[int, str]]] = {}
    first_line: dict[str, int] = {}
    for line, record in records:
        if fmt == "jsonl":
            name = str(record.get("name") or f"imported group {line}").strip()[:200]
            _guarded(name, "'name'", line)
            keys = record.get("keys")
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise FeedbackFormatError("'keys' must be a list of strings", line=line)
            for key in keys:
                _guarded(key, "a key in 'keys'", line)
            if name in groups:
                raise FeedbackFormatError(
                    f"group {name!r} appears twice (first at line {first_line[name]})", line=line
                )
            entries = [(line, key.strip()) for key in keys]
        else:
            name = _text(record, "group", line)[:200]
            entries = [(line, _text(record, "key", line))]
        first_line.setdefault(name, line)
        groups.setdefault(name, []).extend(entries)
    for name, entries in groups.items():
        seen: dict[str, int] = {}
        for line, key in entries:
            if key in seen:
                raise FeedbackFormatError(
                    f"key {key!r} listed twice in group {name!r} (first at line {seen[key]})",
                    line=line,
                )
            seen[key] = line
        if len(entries) < 2:
            raise FeedbackFormatError(
                f"group {name!r} has fewer than two members", line=first_line[name]
            )
    return groups


def feedback_read(
    *,
    study: Study,
    raw_lines: Iterable[bytes],
    name: str,
    kind: str = "auto",
    fmt: str = "auto",
    provenance: str = "",
    max_rows: int | None = None,
) -> FeedbackPlan:
    """Read and check a whole pairs or groups file (its lines as bytes; ``name`` for the
    format and the default provenance) into a plan; nothing is written.

    ``kind`` is ``pairs``, ``groups`` or ``auto`` (from the first record's fields). Raises
    :class:`FeedbackFormatError` (with the line number where it applies).
    """
    fmt = _detect(name, fmt)
    records = []
    for record in _records(raw_lines, fmt, name):
        records.append(record)
        if max_rows is not None and len(records) > max_rows:
            raise FeedbackFormatError(f"more than {max_rows:,} rows", line=record[0])
    if not records:
        raise FeedbackFormatError("the file holds no judgments or groups (it is empty)")
    if kind == "auto":
        fields = set(records[0][1])
        kind = "pairs" if {"key_a", "key_b"} <= fields else "groups"
    if kind not in {"pairs", "groups"}:
        raise FeedbackFormatError(f"unknown kind {kind!r}; choose pairs, groups or auto")
    provenance = clean_provenance(provenance or f"file {Path(name).name}")
    problem = text_problem(provenance)
    if problem:
        raise FeedbackFormatError(f"the provenance {problem}")
    plan = FeedbackPlan(kind=kind, fmt=fmt, provenance=provenance)
    if kind == "pairs":
        pairs = _read_pairs(records)
        index = _KeyIndex(study, {k for _, a, b, _, _ in pairs for k in (a, b)})
        members = _Members(study) if any(who for *_, who in pairs) else None
        plan.pairs = [
            PairRow(
                line,
                a,
                b,
                label,
                index.get(a, line),
                index.get(b, line),
                members.get(who, line) if who and members else None,
            )
            for line, a, b, label, who in pairs
        ]
        return plan
    groups = _read_groups(records, fmt)
    index = _KeyIndex(study, {key for entries in groups.values() for _, key in entries})
    taken = set(
        ComparableGroup.objects.filter(study=study, name__in=list(groups)).values_list(
            "name", flat=True
        )
    )
    for group, entries in groups.items():
        line = entries[0][0]
        if group in taken:
            raise FeedbackFormatError(f"the study already has a group named {group!r}", line=line)
        keys = [key for _, key in entries]
        plan.groups.append(GroupRow(line, group, keys, [index.get(key, at) for at, key in entries]))
    return plan
