"""The steps every browser upload shares, whatever its kind (vectors, records, texts).

An upload's space name is checked first (:func:`import_name_check`); its file is stored under
``uploads/<random>/`` in media storage (:func:`upload_store`; a table of records or texts is
also read whole there, :func:`table_upload_store`); work for the worker is queued by task name
after the commit (:func:`import_enqueue`); and the stored files and their folder are removed
when the upload ends, refused, failed or done (:func:`upload_files_remove`).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from pathlib import Path

import pandas as pd
from celery import current_app
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.utils import timezone
from django.utils.text import get_valid_filename

from spaces.exceptions import EmbeddingFormatError, InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.tables import guess_format, max_table_bytes, read_table

logger = logging.getLogger(__name__)
Status = EmbeddingImport.Status


def upload_folder() -> str:
    """A new folder for one upload's files: ``uploads/<12 random hex digits>``."""
    return f"uploads/{uuid.uuid4().hex[:12]}"


def upload_store(upload: UploadedFile, folder: str) -> str:
    """Save ``upload`` in ``folder`` of media storage under a safe name; returns its name."""
    name = get_valid_filename(Path(upload.name or "upload").name) or "upload"
    return default_storage.save(f"{folder}/{name}", upload)


def upload_files_remove(job: EmbeddingImport) -> None:
    """Delete the uploaded files and their folder (``uploads/<id>/``) when it is left empty."""
    folders = set()
    for field in (job.file, job.extra_file):
        if field and field.name:
            default_storage.delete(field.name)
            folders.add(Path(default_storage.path(field.name)).parent)
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty, or gone already
            folder.rmdir()


def import_name_check(name: str) -> str:
    """The stripped name of an upload's space: not empty, not taken, not being imported."""
    name = (name or "").strip()
    if not name:
        raise EmbeddingFormatError("the space needs a name")
    if (
        EmbeddingSpace.objects.filter(name=name).exists()
        or EmbeddingImport.objects.filter(
            name=name, status__in=[Status.PENDING, Status.RUNNING]
        ).exists()
    ):
        raise EmbeddingFormatError(f"a space named {name!r} exists or is being imported")
    return name


def import_enqueue(import_id: int, task: str) -> None:
    """Queue ``task`` for an import; a broker that is down marks the import failed, saying so."""
    try:  # by name: spaces.tasks imports the modules that call this one
        current_app.send_task(task, args=[import_id], queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    except Exception as exc:  # noqa: BLE001 - a down broker: say so on the page
        logger.warning("could not queue %s for import %s: %s", task, import_id, exc)
        EmbeddingImport.objects.filter(pk=import_id, status=Status.PENDING).update(
            status=Status.FAILED,
            error="could not queue the import (the task broker is unreachable); upload again",
            finished_at=timezone.now(),
        )


def table_upload_store(
    *, user, upload: UploadedFile, name: str, prefix: str, formats: tuple[str, ...], **fields
) -> tuple[EmbeddingImport, pd.DataFrame]:
    """Store a table of records or texts and read it whole; on any error remove it and raise
    (nothing saved).

    Returns the unsaved import row (its ``format`` is ``prefix`` + the table's format) and the
    table read.
    """
    name = import_name_check(name)
    if upload.size > max_table_bytes():
        raise InputFileError(f"{upload.name} is larger than {max_table_bytes() // 2**20} MB")
    if upload.size == 0:
        raise InputFileError("the file is empty")
    fmt = guess_format(upload.name or "", formats)
    job = EmbeddingImport(
        name=name,
        format=prefix + fmt,
        created_by=user,
        original_name=(upload.name or "")[:255],
        **fields,
    )
    job.file.name = upload_store(upload, upload_folder())
    try:
        frame = read_table(job.file.path, fmt)
    except BaseException:
        upload_files_remove(job)
        raise
    return job, frame
