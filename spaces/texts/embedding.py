"""Embedding a text upload in the worker: batched by the sentence model, resumable slices.

The worker embeds in slices (``text_embed_step``): it claims the row with a conditional UPDATE
(a lease renewed per batch), appends each batch's vectors to a local work file (``work_path``) and
stores ``progress_rows`` after it, so a restarted or redelivered task continues where the last
one stopped (the work file is cut back to the stored progress first). The last slice creates
the space, its items and the matrix in one step (:func:`spaces.services.space_from_matrix`,
atomic) and removes the files; an error marks the import failed, removes the files and creates
nothing.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path, PurePosixPath

import numpy as np
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.services import space_from_matrix
from spaces.tables import read_table
from spaces.texts import sentence_model
from spaces.texts.uploads import TEXTS_PREFIX, text_column_values
from spaces.uploads import public_error, upload_files_remove, upload_path

BATCH = 64  # texts per model call (and per progress write)
SLICE_BATCHES = 20  # batches per task run; then the task queues the next slice
LEASE = timedelta(seconds=120)  # a running slice renews it every batch
Status = EmbeddingImport.Status


def _table(job: EmbeddingImport) -> tuple[list[str], list[str]]:
    with upload_path(job.file.name) as path:
        frame = read_table(path, job.format.removeprefix(TEXTS_PREFIX))
    return text_column_values(frame, **job.options)


def _claim(import_id: int) -> bool:
    """Pending → running, or take over a running import whose lease ran out (a dead worker)."""
    now = timezone.now()
    return (
        EmbeddingImport.objects.filter(
            Q(status=Status.PENDING) | Q(status=Status.RUNNING, started_at__lt=now - LEASE),
            pk=import_id,
            format__startswith=TEXTS_PREFIX,
        ).update(status=Status.RUNNING, started_at=now, stage="embedding")
        == 1
    )


def work_path(job: EmbeddingImport) -> Path:
    """The vectors embedded so far (float32, row after row): a local work file under
    ``STORAGE_WORK_DIR`` (a worker that takes over without it starts again from row 0)."""
    folder = Path(settings.STORAGE_WORK_DIR) / "texts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{PurePosixPath(job.file.name).parent.name}-{job.pk}.f32"  # its upload's


def _resume(path: Path, done: int) -> int:
    """Cut the work file back to ``done`` whole rows (a batch written but not recorded goes)."""
    row_bytes = 4 * sentence_model.DIMENSION
    have = path.stat().st_size // row_bytes if path.exists() else 0
    done = min(done, have)
    with open(path, "ab") as f:
        f.truncate(done * row_bytes)
    return done


def text_embed_step(*, import_id: int, max_batches: int = SLICE_BATCHES) -> str:
    """Embed up to ``max_batches`` batches of one text import, storing progress after each.

    Returns ``"more"`` (queue another step), ``"done"``, ``"failed"`` or ``"busy"`` (another
    worker holds the lease) or ``"not run: <status>"``.
    """
    if not _claim(import_id):
        status = EmbeddingImport.objects.filter(pk=import_id).values_list("status", flat=True)
        status = status.first()
        return "busy" if status == Status.RUNNING else f"not run: {status or 'no such import'}"
    job = EmbeddingImport.objects.get(pk=import_id)
    EmbeddingImport.objects.filter(pk=import_id).update(attempts=job.attempts + 1)
    try:
        keys, texts = _table(job)
        path = work_path(job)
        done = _resume(path, job.progress_rows)
        for _ in range(max_batches):
            if done >= len(texts):
                break
            vectors = sentence_model.encode(texts[done : done + BATCH])
            with open(path, "ab") as f:
                f.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
                f.flush()
                os.fsync(f.fileno())
            done += len(vectors)
            EmbeddingImport.objects.filter(pk=import_id).update(
                progress_rows=done, total_rows=len(texts), started_at=timezone.now()
            )
        if done < len(texts):  # release for the next slice
            EmbeddingImport.objects.filter(pk=import_id).update(status=Status.PENDING)
            return "more"
        matrix = np.fromfile(path, dtype="<f4").reshape(len(texts), sentence_model.DIMENSION)
        space = space_from_matrix(
            name=job.name,
            matrix=matrix,
            keys=keys,
            texts=texts,
            space_kind=EmbeddingSpace.Kind.TEXTS,
            item_kind=Item.Kind.TEXT,
            source=f"uploaded {job.original_name} by {job.created_by or 'a deleted user'}; "
            f"embedded with {sentence_model.MODEL_NAME}",
            owner=job.created_by,
        )
    except InputFileError as exc:
        _fail(job, public_error(exc))
        return "failed"
    except Exception as exc:
        _fail(job, public_error(exc))
        raise
    EmbeddingImport.objects.filter(pk=import_id).update(
        status=Status.DONE,
        stage="",
        space=space,
        progress_rows=space.item_count,
        total_rows=space.item_count,
        finished_at=timezone.now(),
    )
    _remove_job_files(job)
    return "done"


def _remove_job_files(job: EmbeddingImport) -> None:
    work_path(job).unlink(missing_ok=True)
    upload_files_remove(job)


def _fail(job: EmbeddingImport, error: str) -> None:
    EmbeddingImport.objects.filter(pk=job.pk).update(
        status=Status.FAILED, error=error, finished_at=timezone.now()
    )
    _remove_job_files(job)
