"""Browser uploads of record tables: store, read (all checks), choose the columns, finish.

A record upload is two steps: ``record_upload_create`` stores the file and reads it whole (a
malformed, empty, too large or non-UTF-8 file is a form error and nothing is kept); the admin
then chooses the columns' roles and ``record_upload_finish`` creates the space through
:func:`spaces.records.create.record_space_create` (atomic) and removes the file. Until then the
``EmbeddingImport`` row waits (status pending, stage ``columns``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.records.create import record_space_create
from spaces.tables import TABLE_FORMATS, read_table
from spaces.uploads import table_upload_store, upload_files_remove

Status = EmbeddingImport.Status
RECORDS_PREFIX = "records-"
ROLES = ("numeric", "categorical", "excluded")


def record_upload_create(*, user, upload: UploadedFile, name: str) -> EmbeddingImport:
    """Store a CSV/Parquet table for a record space; raises ``InputFileError`` on bad input."""
    job, frame = table_upload_store(
        user=user, upload=upload, name=name, prefix=RECORDS_PREFIX, formats=TABLE_FORMATS
    )
    job.stage = "columns"
    job.total_rows = len(frame)
    job.save()
    return job


def record_upload_table(job: EmbeddingImport) -> pd.DataFrame:
    return read_table(job.file.path, job.format.removeprefix(RECORDS_PREFIX))


def record_upload_finish(
    *,
    job: EmbeddingImport,
    roles: Mapping[str, str],
    label_column: str = "",
    key_column: str = "",
    hidden_columns: Sequence[str] | None = None,
    frame: pd.DataFrame | None = None,
) -> EmbeddingSpace:
    """Create the space with the chosen roles and the columns hidden from annotators (None:
    the label column); on bad choices raise and keep the upload. ``frame``: the upload's table
    when the caller has read it already (the columns page has), else it is read here."""
    if job.status != Status.PENDING or not job.format.startswith(RECORDS_PREFIX):
        raise EmbeddingFormatError("this upload is not waiting for its columns")
    if frame is None:
        frame = record_upload_table(job)
    unknown = sorted(set(roles) - set(frame.columns))
    if unknown:
        raise EmbeddingFormatError(f"no column {unknown[0]!r} in the file")
    bad = sorted(r for r in roles.values() if r not in ROLES)
    if bad:
        raise EmbeddingFormatError(f"unknown role {bad[0]!r}")
    for chosen, what in ((label_column, "label"), (key_column, "key")):
        if chosen and chosen not in frame.columns:
            raise EmbeddingFormatError(f"no column {chosen!r} for the {what}")
    pick = {role: [c for c in frame.columns if roles.get(c, "excluded") == role] for role in ROLES}
    for special in (label_column, key_column):
        if special and special in pick["numeric"] + pick["categorical"]:
            raise EmbeddingFormatError(f"the column {special!r} is the label or key: exclude it")
    with transaction.atomic():
        space = record_space_create(
            name=job.name,
            frame=frame,
            numeric=pick["numeric"],
            categorical=pick["categorical"],
            excluded=[c for c in pick["excluded"] if c != label_column],
            label_column=label_column,
            hidden_columns=hidden_columns,
            owner=job.created_by,
            key_column=key_column or None,
            source=f"uploaded {job.original_name} by {job.created_by or 'a deleted user'}",
        )
        EmbeddingImport.objects.filter(pk=job.pk).update(
            status=Status.DONE,
            stage="",
            space=space,
            progress_rows=space.item_count,
            total_rows=space.item_count,
            options={
                "roles": dict(roles),
                "label_column": label_column,
                "key_column": key_column,
                "hidden_columns": space.hidden_columns,
            },
            finished_at=timezone.now(),
        )
    upload_files_remove(job)
    return space
