"""Import existing feedback into a study: pair judgments and comparable groups.

File formats (UTF-8; ``fmt`` is ``csv``, ``jsonl`` or ``auto`` from the extension):

pairs
    CSV with a header containing ``key_a,key_b,label``, or JSON lines
    ``{"key_a": ..., "key_b": ..., "label": ...}``. Labels: ``comparable`` / ``incomparable`` /
    ``unsure`` (also ``1``/``0``, ``true``/``false``, ``yes``/``no``; any case). An optional
    ``annotator`` column names the member who answered (username or e-mail, any case; an empty
    cell: nobody): the answer is then theirs and counts in agreement.
groups
    CSV in long form with a header containing ``group,key`` (one row per member), or JSON lines
    ``{"name": ..., "keys": [...]}`` (``name`` optional: ``imported group <line>``).

Keys are the items' keys in the study's space (exact match). Everything is validated
(``annotation/setup/feedback_files.py: feedback_read``, the one parser of the command and of the
study's import page) before anything is written — an unknown key, a pair of an item with itself,
a bad label, a group with fewer than two members or a key listed twice, a group name already
used in the study, bad JSON, undecodable bytes, text with NUL or a lone surrogate (the guard of
form input, :func:`common.text.text_problem`), an empty file — each a
:class:`FeedbackFormatError` with the line number; then one transaction stores everything (``source=imported`` with the provenance string, the
named annotator or none) and queues a refit of the study after the commit.

Repeated pairs in a pairs file are kept: each row is one observation, as several annotators'
answers to one pair would be.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
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
from annotation.setup.feedback_files import (
    FeedbackFormatError,
    FeedbackPlan,
    clean_provenance,
    feedback_read,
)
from common.iterables import batched

BATCH_SIZE = 5000
__all__ = [
    "BATCH_SIZE",
    "FeedbackFormatError",
    "feedback_import",
    "feedback_store",
    "groups_import",
    "judgments_import",
]


@dataclass(frozen=True)
class FeedbackImportSummary:
    judgments: int = 0
    groups: int = 0
    members: int = 0
    provenance: str = ""


# --- storing (by item id; also used by the demo) ----------------------------------------------


def _judgment_rows(study: Study, pairs: Iterable[tuple], provenance: str):
    """Database-ready rows for ``PairJudgment`` (all concrete fields but the id), one per pair
    ``(item_a_id, item_b_id, label[, annotator_id])``.

    Fields are prepared once from a template judgment (defaults included, so a field added to
    the model later is filled as ``bulk_create`` would fill it); per row only the canonical
    pair, the label, the annotator and a fresh ``client_id`` change.
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
    annotator_at = position["annotator_id"]
    for a, b, label, *who in pairs:
        if a == b:
            raise ValueError(f"a pair of item {a} with itself")
        if label not in Label.values:
            raise ValueError(f"unknown label {label!r}")
        row = list(base)
        row[a_at], row[b_at], row[label_at] = min(a, b), max(a, b), label
        row[client_at] = client_field.get_db_prep_save(uuid.uuid4(), connection)
        row[annotator_at] = who[0] if who else None
        yield row


@transaction.atomic
def judgments_import(*, study: Study, pairs: Iterable[tuple], provenance: str) -> int:
    """Store ``(item_a_id, item_b_id, label[, annotator_id])`` as imported judgments (the
    annotator a member's user id, or None); returns the count.

    Pairs are stored canonically (smaller id first); each gets a fresh ``client_id``. Rows go
    in batches through one ``executemany`` INSERT each: ``bulk_create``'s per-object work made
    the demo's 100,000 pairs take ~20 s on SQLite, this takes ~5 s (same rows, same checks -
    the database's constraints still apply).
    """
    provenance = clean_provenance(provenance)
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
    provenance = clean_provenance(provenance)
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


def feedback_store(*, study: Study, plan: FeedbackPlan) -> FeedbackImportSummary:
    """Store a checked plan (``feedback_files.feedback_read``) in one transaction."""
    if plan.kind == "pairs":
        rows = [(p.item_a, p.item_b, p.label, p.annotator) for p in plan.pairs]
        count = judgments_import(study=study, pairs=rows, provenance=plan.provenance)
        return FeedbackImportSummary(judgments=count, provenance=plan.provenance)
    created = groups_import(
        study=study, groups=[(g.name, g.items) for g in plan.groups], provenance=plan.provenance
    )
    return FeedbackImportSummary(
        groups=len(created), members=plan.members, provenance=plan.provenance
    )


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
    with open(path, "rb") as lines:
        plan = feedback_read(
            study=study, raw_lines=lines, name=path.name, kind=kind, fmt=fmt, provenance=provenance
        )
    return feedback_store(study=study, plan=plan)
