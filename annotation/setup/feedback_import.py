"""Import existing feedback into a study: pair judgments and comparable groups.

File formats (UTF-8; ``fmt`` is ``csv``, ``jsonl`` or ``auto`` from the extension):

pairs
    CSV with a header containing ``key_a,key_b,label``, or JSON lines
    ``{"key_a": ..., "key_b": ..., "label": ...}``. Labels: ``comparable`` / ``incomparable`` /
    ``unsure`` (also ``1``/``0``, ``true``/``false``, ``yes``/``no``; any case).
groups
    CSV in long form with a header containing ``group,key`` (one row per member), or JSON lines
    ``{"name": ..., "keys": [...]}`` (``name`` optional: ``imported group <line>``).

Keys are the items' keys in the study's space (exact match). Everything is validated before
anything is written — an unknown key, a pair of an item with itself, a bad label, a group with
fewer than two members or a key listed twice, a group name already used in the study, bad JSON,
undecodable bytes, text with NUL or a lone surrogate (the guard of form input,
:func:`common.text.text_problem`), an empty file — each a :class:`FeedbackFormatError` with the
line number;
then one transaction stores everything (``source=imported`` with the provenance string, no
annotator) and queues a refit of the study after the commit.

Repeated pairs in a pairs file are kept: each row is one observation, as several annotators'
answers to one pair would be.
"""

from __future__ import annotations

import csv
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db import connection, transaction

from annotation.hooks import feedback_changed
from annotation.models import (
    ComparableGroup,
    GroupEdit,
    Label,
    PairJudgment,
    Source,
    Study,
    StudyCounter,
)
from common.iterables import batched
from common.text import text_problem
from spaces.exceptions import InputFileError
from spaces.models import Item
from spaces.tables import jsonl_objects

BATCH_SIZE = 5000
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
class FeedbackImportSummary:
    judgments: int = 0
    groups: int = 0
    members: int = 0
    provenance: str = ""


# --- storing (by item id; also used by the demo) ----------------------------------------------


def _clean_provenance(provenance: str) -> str:
    provenance = (provenance or "").strip() or "imported"
    return provenance[:MAX_PROVENANCE]


def _judgment_rows(study: Study, pairs: Iterable[tuple[int, int, str]], provenance: str):
    """Database-ready rows for ``PairJudgment`` (all concrete fields but the id), one per pair.

    Fields are prepared once from a template judgment (defaults included, so a field added to
    the model later is filled as ``bulk_create`` would fill it); per row only the canonical
    pair, the label and a fresh ``client_id`` change.
    """
    fields = [f for f in PairJudgment._meta.concrete_fields if not f.primary_key]
    template = PairJudgment(
        study=study,
        item_a_id=0,
        item_b_id=0,
        label=Label.COMPARABLE,
        source=Source.IMPORTED,
        provenance=provenance,
    )
    base = [f.get_db_prep_save(f.pre_save(template, add=True), connection) for f in fields]
    position = {f.attname: i for i, f in enumerate(fields)}
    a_at, b_at, label_at = position["item_a_id"], position["item_b_id"], position["label"]
    client_at, client_field = position["client_id"], fields[position["client_id"]]
    for a, b, label in pairs:
        if a == b:
            raise ValueError(f"a pair of item {a} with itself")
        if label not in Label.values:
            raise ValueError(f"unknown label {label!r}")
        row = list(base)
        row[a_at], row[b_at], row[label_at] = min(a, b), max(a, b), label
        row[client_at] = client_field.get_db_prep_save(uuid.uuid4(), connection)
        yield row


@transaction.atomic
def judgments_import(
    *, study: Study, pairs: Iterable[tuple[int, int, str]], provenance: str
) -> int:
    """Store ``(item_a_id, item_b_id, label)`` triples as imported judgments; returns the count.

    Pairs are stored canonically (smaller id first); each gets a fresh ``client_id``. Rows go
    in batches through one ``executemany`` INSERT each: ``bulk_create``'s per-object work made
    the demo's 100,000 pairs take ~20 s on SQLite, this takes ~5 s (same rows, same checks -
    the database's constraints still apply).
    """
    provenance = _clean_provenance(provenance)
    fields = [f for f in PairJudgment._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(PairJudgment._meta.db_table)} "
        f"({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    count = 0
    with connection.cursor() as cursor:
        for batch in batched(_judgment_rows(study, pairs, provenance), BATCH_SIZE):
            cursor.executemany(sql, batch)
            count += len(batch)
    if count:
        feedback_changed(study_id=study.pk)
    return count


@transaction.atomic
def groups_import(
    *, study: Study, groups: Sequence[tuple[str, Sequence[int]]], provenance: str
) -> list[ComparableGroup]:
    """Create imported comparable groups ``(name, item_ids)``, one new group revision for all.

    History: one ``create`` and one ``add`` edit per member, as for a group made by hand.
    """
    if not groups:
        return []
    provenance = _clean_provenance(provenance)
    revision = StudyCounter.group_revision_next(study)
    created = []
    through, edits = [], []
    Member = ComparableGroup.members.through
    for name, item_ids in groups:
        group = ComparableGroup.objects.create(
            study=study,
            name=name,
            source=Source.IMPORTED,
            provenance=provenance,
            revision=revision,
        )
        created.append(group)
        through += [Member(comparablegroup_id=group.pk, item_id=i) for i in item_ids]
        edits.append(
            GroupEdit(
                group=group,
                action=GroupEdit.Action.CREATE,
                detail=f"imported: {provenance}"[:300],
                revision=revision,
            )
        )
        edits += [
            GroupEdit(group=group, action=GroupEdit.Action.ADD, item_id=i, revision=revision)
            for i in item_ids
        ]
    Member.objects.bulk_create(through, batch_size=BATCH_SIZE)
    GroupEdit.objects.bulk_create(edits, batch_size=BATCH_SIZE)
    feedback_changed(study_id=study.pk)
    return created


# --- reading files ------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
                yield number, text.removeprefix("\ufeff") if number == 1 else text
            except UnicodeDecodeError as exc:
                raise FeedbackFormatError(
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                    line=number,
                ) from None


def _records(path: Path, fmt: str) -> Iterator[tuple[int, dict]]:
    """(line number, record) for every non-blank record of a CSV or JSON-lines file."""
    if fmt == "jsonl":
        yield from jsonl_objects(
            _lines(path),
            error=FeedbackFormatError,
            not_json="not valid JSON ({})",
            not_object="expected a JSON object",
        )
        return
    numbered = _lines(path)
    line_of = {"n": 0}

    def texts():
        for number, text in numbered:
            line_of["n"] = number
            yield text

    reader = csv.DictReader(texts(), delimiter="\t" if path.suffix == ".tsv" else ",")
    if reader.fieldnames is None:
        return
    reader.fieldnames = [name.strip() for name in reader.fieldnames]
    for record in reader:
        if None in record or any(v is None for v in record.values()):
            raise FeedbackFormatError(
                f"the row has a different number of columns than the header ({len(reader.fieldnames)})",
                line=line_of["n"],
            )
        if any(str(v).strip() for v in record.values()):
            yield line_of["n"], record


def _detect(path: Path, fmt: str) -> str:
    if fmt == "auto":
        suffix = path.suffix.lower()
        if suffix in {".jsonl", ".ndjson", ".json"}:
            return "jsonl"
        if suffix in {".csv", ".tsv"}:
            return "csv"
        raise FeedbackFormatError(
            f"cannot tell the format of {path.name}: name it .csv or .jsonl, or pass --format"
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


def _read_pairs(records: list[tuple[int, dict]]) -> list[tuple[int, str, str, str]]:
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
        pairs.append((line, key_a, key_b, label))
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


def feedback_import(
    *,
    study: Study,
    path: str | Path,
    kind: str = "auto",
    fmt: str = "auto",
    provenance: str = "",
) -> FeedbackImportSummary:
    """Validate a pairs or groups file completely, then store it in one transaction.

    ``kind`` is ``pairs``, ``groups`` or ``auto`` (from the first record's fields). Raises
    :class:`FeedbackFormatError` (with the line number where it applies); nothing is stored then.
    """
    path = Path(path)
    if not path.is_file():
        raise FeedbackFormatError(f"no such file: {path}")
    fmt = _detect(path, fmt)
    records = list(_records(path, fmt))
    if not records:
        raise FeedbackFormatError("the file holds no judgments or groups (it is empty)")
    if kind == "auto":
        fields = set(records[0][1])
        kind = "pairs" if {"key_a", "key_b"} <= fields else "groups"
    if kind not in {"pairs", "groups"}:
        raise FeedbackFormatError(f"unknown kind {kind!r}; choose pairs, groups or auto")
    provenance = _clean_provenance(provenance or f"file {path.name}")
    problem = text_problem(provenance)
    if problem:
        raise FeedbackFormatError(f"the provenance {problem}")
    if kind == "pairs":
        pairs = _read_pairs(records)
        index = _KeyIndex(study, {k for _, a, b, _ in pairs for k in (a, b)})
        resolved = [(index.get(a, line), index.get(b, line), label) for line, a, b, label in pairs]
        count = judgments_import(study=study, pairs=resolved, provenance=provenance)
        return FeedbackImportSummary(judgments=count, provenance=provenance)
    groups = _read_groups(records, fmt)
    index = _KeyIndex(study, {key for entries in groups.values() for _, key in entries})
    taken = set(
        ComparableGroup.objects.filter(study=study, name__in=list(groups)).values_list(
            "name", flat=True
        )
    )
    resolved = []
    for name, entries in groups.items():
        if name in taken:
            raise FeedbackFormatError(
                f"the study already has a group named {name!r}", line=entries[0][0]
            )
        resolved.append((name, [index.get(key, line) for line, key in entries]))
    created = groups_import(study=study, groups=resolved, provenance=provenance)
    members = sum(len(ids) for _, ids in resolved)
    return FeedbackImportSummary(groups=len(created), members=members, provenance=provenance)
