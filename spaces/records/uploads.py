"""Browser uploads of record tables: store and check the start, choose the columns, queue.

A record upload is three steps, none of which reads more of the table in the web request than
its head (:func:`spaces.tables.table_head`: a CSV's first ``PREFLIGHT_KB``, a Parquet file's
footer and first batch):

1. ``record_upload_create`` stores the file and checks its head — the bounds a Parquet footer
   declares (rows, columns, decompressed size), the header, the first records' cells — so a
   malformed, empty, too large or non-UTF-8 start is a form error and nothing is kept. The
   ``EmbeddingImport`` row waits (status pending, stage ``columns``).
2. The admin chooses the columns; ``record_upload_choose`` checks the choice against the head
   (a text column declared numeric in the first rows is a form error at once), stores it in the
   row's ``options`` (stage ``queued``) and queues ``spaces.import_records`` after the commit.
3. The worker imports the whole table (:func:`spaces.records.importing.record_import_run`).
   A choice the rest of the table contradicts (a text value further down a numeric column, a
   repeated key) brings the upload back to step 2 with the message; a bad file fails it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingImport
from spaces.records.columns import hidden_columns_check
from spaces.records.featuremap import FeatureMapFit
from spaces.records.keys import KeyCheck
from spaces.tables import TABLE_FORMATS, TableHead, table_head
from spaces.uploads import import_enqueue, table_upload_store, upload_path

Status = EmbeddingImport.Status
RECORDS_PREFIX = "records-"
IMPORT_TASK = "spaces.import_records"
ROLES = ("numeric", "categorical", "excluded")
COLUMNS = "columns"  # the stage of an upload waiting for its columns
QUEUED = "queued"  # the stage of an upload whose columns are chosen, waiting for a worker


def _head(path, fmt: str) -> TableHead:
    head = table_head(path, fmt)
    if head.frame.empty:
        raise EmbeddingFormatError("the file has a header but no rows")
    return head


def record_upload_create(*, user, upload: UploadedFile, name: str) -> EmbeddingImport:
    """Store a CSV/Parquet table for a record space; raises ``InputFileError`` on bad input."""
    job, head = table_upload_store(
        user=user,
        upload=upload,
        name=name,
        prefix=RECORDS_PREFIX,
        formats=TABLE_FORMATS,
        read=_head,
    )
    job.stage = COLUMNS
    job.total_rows = head.total_rows
    job.save()
    return job


def record_upload_head(job: EmbeddingImport) -> TableHead:
    """The upload's columns and first rows (what the columns page shows and guesses from)."""
    with upload_path(job.file.name) as path:
        return _head(path, job.format.removeprefix(RECORDS_PREFIX))


def waiting_for_columns(job: EmbeddingImport) -> bool:
    return (
        job.format.startswith(RECORDS_PREFIX)
        and job.status == Status.PENDING
        and job.stage == COLUMNS
    )


def record_upload_choose(
    *,
    job: EmbeddingImport,
    head: TableHead,
    roles: Mapping[str, str],
    label_column: str = "",
    key_column: str = "",
    hidden_columns: Sequence[str] | None = None,
) -> EmbeddingImport:
    """Check the chosen roles against the table's head, store them and queue the import.

    Raises ``EmbeddingFormatError`` (the upload stays waiting) for a column that is not in the
    file, an unknown role, the label or key inside φ, no feature, or a value of the first rows
    the choice cannot take (its column and row named).
    """
    if not waiting_for_columns(job):
        raise EmbeddingFormatError("this upload is not waiting for its columns")
    columns = list(head.columns)
    unknown = sorted(set(roles) - set(columns))
    if unknown:
        raise EmbeddingFormatError(f"no column {unknown[0]!r} in the file")
    bad = sorted(r for r in roles.values() if r not in ROLES)
    if bad:
        raise EmbeddingFormatError(f"unknown role {bad[0]!r}")
    for chosen, what in ((label_column, "label"), (key_column, "key")):
        if chosen and chosen not in columns:
            raise EmbeddingFormatError(f"no column {chosen!r} for the {what}")
    pick = {role: [c for c in columns if roles.get(c, "excluded") == role] for role in ROLES}
    for special in (label_column, key_column):
        if special and special in pick["numeric"] + pick["categorical"]:
            raise EmbeddingFormatError(f"the column {special!r} is the label or key: exclude it")
    hidden = hidden_columns_check(columns, label_column, hidden_columns)
    options = {
        "roles": {c: roles.get(c, "excluded") for c in columns},
        "label_column": label_column,
        "key_column": key_column,
        "hidden_columns": hidden,
    }
    sample_check(head, options)
    with transaction.atomic():
        updated = EmbeddingImport.objects.filter(
            pk=job.pk, status=Status.PENDING, stage=COLUMNS
        ).update(stage=QUEUED, options=options, error="", progress_rows=0)
        if not updated:  # a second POST of the same form won the race
            raise EmbeddingFormatError("this upload is not waiting for its columns")
        transaction.on_commit(lambda: record_import_enqueue(job.pk))
    job.refresh_from_db()
    return job


def features(options: Mapping) -> dict:
    """The arguments of :class:`FeatureMapFit` for an upload's chosen ``options``."""
    roles, label = options["roles"], options.get("label_column", "")
    pick = {role: [c for c, r in roles.items() if r == role] for role in ROLES}
    return {
        "numeric": pick["numeric"],
        "categorical": pick["categorical"],
        "excluded": [c for c in pick["excluded"] if c != label] + ([label] if label else []),
        "max_categories": settings.TABLE_MAX_CATEGORIES,
    }


def sample_check(head: TableHead, options: Mapping) -> None:
    """The choice applied to the first rows: bad values and keys there are errors at once."""
    try:
        FeatureMapFit(**features(options)).update(head.frame)
    except ValueError as exc:
        raise EmbeddingFormatError(str(exc)) from None
    check = KeyCheck(options.get("key_column") or "")
    check.update(head.frame)
    check.finish(lambda: [head.frame])


def record_import_enqueue(import_id: int) -> None:
    import_enqueue(import_id, IMPORT_TASK)
