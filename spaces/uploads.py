"""The steps every browser upload shares, whatever its kind (vectors, records, texts).

An upload's space name is checked first (:func:`import_name_check`); its file is stored under
``uploads/<random>/`` in media storage once the request has read its head from a local work
file (:func:`uploads_kept`; a table of records or texts within the request's bounds,
:func:`table_upload_store`); work for the
worker is queued by task name after the commit (:func:`import_enqueue`), and reports its
progress on the import's row (:class:`ProgressWriter`); the stored files and their folder are
removed when the upload ends, refused, failed, expired or done (:func:`upload_files_remove`).
An error people read never names a server path (:func:`public_error`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from celery import current_app
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.utils import timezone
from django.utils.text import get_valid_filename

from common import storage
from common.text import without_paths
from spaces.exceptions import EmbeddingFormatError, InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.tables import guess_format, max_table_bytes

logger = logging.getLogger(__name__)
Status = EmbeddingImport.Status


def upload_folder() -> str:
    """A new folder for one upload's files: ``uploads/<12 random hex digits>``."""
    return f"uploads/{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def uploads_kept(folder: str, *uploads: UploadedFile | None):
    """The uploads written to local work files under safe names, yielded as ``(local path,
    stored name)`` pairs (``None`` for a missing one) for the request to read their heads
    locally; when the block ends without error each is put into media storage under
    ``folder`` (local: a rename; S3: a streamed upload). On an error nothing is stored."""
    with storage.work_folder("upload-") as work:
        kept: list[tuple[Path, str] | None] = []
        for upload in uploads:
            if upload is None:
                kept.append(None)
                continue
            name = get_valid_filename(Path(upload.name or "upload").name) or "upload"
            while (work / name).exists():  # the vocabulary named like the matrix
                name = f"extra-{name}"
            with open(work / name, "wb") as f:
                for chunk in upload.chunks():
                    f.write(chunk)
            kept.append((work / name, f"{folder}/{name}"))
        yield kept
        try:
            for entry in kept:
                if entry is not None:
                    storage.store_path(*entry)
        except BaseException:
            storage.folder_remove(folder)
            raise


@contextlib.contextmanager
def upload_path(name: str):
    """A local path of a stored upload (``common.storage.readable_path``: a streamed copy when
    media are in a bucket); an upload that is gone is an ``InputFileError`` people can read."""
    try:
        with storage.readable_path(name) as path:
            yield path
    except FileNotFoundError:
        raise InputFileError("the uploaded file is gone; upload it again") from None


def upload_files_remove(job: EmbeddingImport) -> None:
    """Delete the uploaded files and their folder (``uploads/<random>/``, with anything else
    stored in it)."""
    folders = set()
    for field in (job.file, job.extra_file):
        if field and field.name:
            default_storage.delete(field.name)
            folders.add(PurePosixPath(field.name).parent)
    for folder in folders:
        if folder.parent == PurePosixPath("uploads"):  # an upload's own folder
            storage.folder_remove(str(folder))


def public_error(error: BaseException | str) -> str:
    """The message of an upload's error as people read it: the server's paths cut to file
    names, at most 2,000 characters. An ``InputFileError`` is its message; anything else is
    prefixed by its type (``OSError: …``)."""
    if isinstance(error, BaseException) and not isinstance(error, InputFileError):
        error = f"{type(error).__name__}: {error}"
    return without_paths(str(error))[:2000]


class ProgressWriter:
    """Writes an import's progress on its row at most every ``every`` seconds (and at each new
    stage); ``renew``: also renews the worker's lease (``started_at``)."""

    def __init__(self, import_id: int, *, renew: bool = False, every: float = 0.5):
        self.import_id, self.renew, self.every = import_id, renew, every
        self.stage, self.last = "", 0.0

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if stage == self.stage and now - self.last < self.every:
            return
        self.stage, self.last = stage, now
        values = {"stage": stage, "progress_rows": done, "total_rows": total}
        if self.renew:
            values["started_at"] = timezone.now()
        EmbeddingImport.objects.filter(pk=self.import_id).update(**values)


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
    *,
    user,
    upload: UploadedFile,
    name: str,
    prefix: str,
    formats: tuple[str, ...],
    read: Callable,
    **fields,
):
    """Store a table of records or texts and read it with ``read(path, format)`` (within the
    request's bounds); on any error remove it and raise (nothing saved).

    Returns the unsaved import row (its ``format`` is ``prefix`` + the table's format) and what
    ``read`` returned.
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
    with uploads_kept(upload_folder(), upload) as [(path, stored)]:
        job.file.name = stored
        result = read(path, fmt)
    return job, result
