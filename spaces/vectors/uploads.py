"""Browser uploads of embedding files: store, preflight, queue, and run as a Celery task.

``embedding_import_create`` stores the uploaded file(s) under ``uploads/`` in media storage
(:mod:`spaces.uploads`, the steps every upload shares), reads the first block with the same
reader as ``import_embeddings`` (so a wrong format, a bad header, undecodable bytes or an empty
file are form errors at once) and queues ``spaces.tasks.import_embeddings_task`` after the
commit. ``embedding_import_run`` is the task's body: it claims the import with a conditional
UPDATE (a redelivered message does not run it twice), imports through
:func:`spaces.vectors.importing.space_import` (all checks, atomic) while reporting progress on
the row, and removes the uploaded files when it ends.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from spaces.exceptions import EmbeddingFormatError, InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.uploads import (
    ProgressWriter,
    import_enqueue,
    import_name_check,
    public_error,
    upload_files_remove,
    upload_folder,
    upload_path,
    uploads_kept,
)
from spaces.vectors.bounded import PreflightBudgetSpent, preflight_budget
from spaces.vectors.importing import space_import
from spaces.vectors.reader import EmbeddingReader

# Kept from before spaces left annotation, so messages already queued still run.
IMPORT_TASK = "annotation.import_embeddings"

TIME_LIMIT = 3300  # seconds; a run older than this is dead (the task's hard time limit)
Status = EmbeddingImport.Status


def max_upload_bytes() -> int:
    return settings.MAX_UPLOAD_MB * 1024 * 1024


def _extra_paths(job: EmbeddingImport, extra: Path | None) -> dict:
    """The second file's role: the vocabulary of an .npy, or the vectors of a records CSV."""
    if extra is None:
        return {"vocab": None, "vectors": None}
    is_npy = job.format == "npy" or (job.format == "auto" and job.file.name.endswith(".npy"))
    return {"vocab": extra, "vectors": None} if is_npy else {"vocab": None, "vectors": extra}


def _preflight(job: EmbeddingImport, path: Path, extra: Path | None) -> None:
    """Read the start of the file (the first block, at most ``PREFLIGHT_KB`` of decompressed
    data): structural problems become form errors before anything queues; a file whose first
    block is longer is checked by the worker (the request never reads a whole upload)."""
    with preflight_budget(settings.PREFLIGHT_KB * 1024):
        try:
            reader = EmbeddingReader(
                path, fmt=job.format, limit=job.limit, **_extra_paths(job, extra)
            )
            blocks = iter(reader)
            try:
                next(blocks)
            finally:
                blocks.close()  # closes the file
        except PreflightBudgetSpent:
            pass


@contextlib.contextmanager
def _local_files(job: EmbeddingImport):
    """Local paths of the upload and its second file (copies when media are in a bucket)."""
    with contextlib.ExitStack() as stack:
        path = stack.enter_context(upload_path(job.file.name))
        extra = None
        if job.extra_file:
            extra = stack.enter_context(upload_path(job.extra_file.name))
        yield path, extra


def embedding_import_create(
    *,
    user,
    upload: UploadedFile,
    name: str,
    fmt: str = "auto",
    extra: UploadedFile | None = None,
    kind: str = "",
    tags: list[str] | None = None,
    limit: int | None = None,
) -> EmbeddingImport:
    """Store an upload and queue its import; raises ``EmbeddingFormatError`` on bad input."""
    name = import_name_check(name)
    for part in (upload, extra):
        if part is not None and part.size > max_upload_bytes():
            raise EmbeddingFormatError(
                f"{part.name} is larger than the upload limit of {settings.MAX_UPLOAD_MB} MB"
            )
    folder = upload_folder()
    job = EmbeddingImport(
        name=name,
        format=fmt,
        kind=kind,
        tags=list(tags or []),
        limit=limit,
        created_by=user,
        original_name=(upload.name or "")[:255],
    )
    with uploads_kept(folder, upload, extra) as (main, second):
        job.file.name = main[1]
        if second is not None:
            job.extra_file.name = second[1]
        _preflight(job, main[0], second and second[0])
    with transaction.atomic():
        job.save()
        transaction.on_commit(lambda: import_enqueue(job.pk, IMPORT_TASK))
    return job


def _claim(import_id: int) -> bool:
    """Pending -> running; or take over a run whose worker died (older than the time limit)."""
    stale = timezone.now() - timedelta(seconds=TIME_LIMIT)
    claimed = EmbeddingImport.objects.filter(
        Q(status=Status.PENDING) | Q(status=Status.RUNNING, started_at__lt=stale), pk=import_id
    ).update(
        status=Status.RUNNING, started_at=timezone.now(), stage="reading", progress_rows=0, error=""
    )
    return claimed == 1


def embedding_import_run(*, import_id: int) -> str:
    """Run one uploaded import (idempotent: a finished or claimed import is left alone)."""
    if not _claim(import_id):
        status = EmbeddingImport.objects.filter(pk=import_id).values_list("status", flat=True)
        return f"not run: {status.first() or 'no such import'}"
    job = EmbeddingImport.objects.get(pk=import_id)
    EmbeddingImport.objects.filter(pk=import_id).update(attempts=job.attempts + 1)
    # A previous attempt may have committed the space and died before saying so.
    done = EmbeddingSpace.objects.filter(name=job.name, created_at__gte=job.created_at).first()
    try:
        space = done or _import(job)
    except InputFileError as exc:
        _finish(job, status=Status.FAILED, error=public_error(exc))
        return "failed"
    except Exception as exc:
        _finish(job, status=Status.FAILED, error=public_error(exc))
        raise
    _finish(job, status=Status.DONE, space=space)
    return "done"


def _import(job: EmbeddingImport) -> EmbeddingSpace:
    with _local_files(job) as (path, extra):
        return space_import(
            path=path,
            name=job.name,
            fmt=job.format,
            limit=job.limit,
            kind=job.kind or None,
            tags=job.tags,
            source=f"uploaded {job.original_name} by {job.created_by or 'a deleted user'}",
            progress=ProgressWriter(job.pk),
            owner=job.created_by,
            **_extra_paths(job, extra),
        )


def _finish(job: EmbeddingImport, *, status: str, error: str = "", space=None) -> None:
    values = {"status": status, "error": error, "finished_at": timezone.now()}
    if space is not None:
        values |= {
            "space": space,
            "stage": "",
            "progress_rows": space.item_count,
            "total_rows": space.item_count,
        }
    EmbeddingImport.objects.filter(pk=job.pk).update(**values)
    upload_files_remove(job)
