"""Text spaces: uploaded short texts embedded by the sentence model, batched and resumable.

``text_upload_create`` reads the whole upload in the request (CSV with a text column, or JSONL;
every text checked: present, not blank, at most ``MAX_TEXT_CHARS``; keys unique) — any problem
is a form error and nothing is kept — then queues the embedding. The worker embeds in slices
(``text_embed_step``): it claims the row with a conditional UPDATE (a lease renewed per batch),
appends each batch's vectors to a work file next to the upload and stores ``progress_rows``
after it, so a restarted or redelivered task continues where the last one stopped (the work
file is cut back to the stored progress first). The last slice creates the space, its items
and the matrix in one step (:func:`spaces.services.space_from_matrix`, atomic) and removes the
files; an error marks the import failed, removes the files and creates nothing.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.services import MAX_KEY, space_from_matrix
from spaces.tables import TEXT_FORMATS, read_table
from spaces.texts import sentence_model
from spaces.uploads import import_enqueue, table_upload_store, upload_files_remove

TEXTS_PREFIX = "texts-"
EMBED_TASK = "spaces.embed_texts"
MAX_TEXT_CHARS = 5000
BATCH = 64  # texts per model call (and per progress write)
SLICE_BATCHES = 20  # batches per task run; then the task queues the next slice
LEASE = timedelta(seconds=120)  # a running slice renews it every batch
Status = EmbeddingImport.Status


def text_column_values(frame: pd.DataFrame, *, text_column: str, key_column: str = ""):
    """(keys, texts) from an uploaded table; ``InputFileError`` naming the row on bad input."""
    if text_column not in frame.columns:
        raise InputFileError(
            f"no column {text_column!r}; the file has {', '.join(map(str, frame.columns[:10]))}"
        )
    if key_column and key_column not in frame.columns:
        raise InputFileError(f"no column {key_column!r} for the keys")
    texts = []
    for row, value in enumerate(frame[text_column].tolist(), start=1):
        if not isinstance(value, str) or not value.strip():
            raise InputFileError(f"no text in {text_column!r}", line=row, unit="record")
        if len(value) > MAX_TEXT_CHARS:
            raise InputFileError(f"a text longer than {MAX_TEXT_CHARS}", line=row, unit="record")
        texts.append(value.strip())
    if key_column:
        keys = [str(v).strip() for v in frame[key_column].tolist()]
    else:
        keys = [f"text {i}" for i in range(1, len(texts) + 1)]
    seen: dict[str, int] = {}
    for row, key in enumerate(keys, start=1):
        if not key or len(key) > MAX_KEY:
            raise InputFileError("the key is empty or too long", line=row, unit="record")
        if key in seen:
            raise InputFileError(
                f"the key {key!r} appears twice (first in record {seen[key]})",
                line=row,
                unit="record",
            )
        seen[key] = row
    return keys, texts


def _table(job: EmbeddingImport) -> tuple[list[str], list[str]]:
    frame = read_table(job.file.path, job.format.removeprefix(TEXTS_PREFIX))
    return text_column_values(frame, **job.options)


def text_upload_create(
    *, user, upload: UploadedFile, name: str, text_column: str = "text", key_column: str = ""
) -> EmbeddingImport:
    """Store and check a text upload, then queue its embedding (after the commit)."""
    if not sentence_model.available():
        raise InputFileError(sentence_model.MISSING)
    options = {"text_column": text_column.strip(), "key_column": key_column.strip()}
    job, frame = table_upload_store(
        user=user,
        upload=upload,
        name=name,
        prefix=TEXTS_PREFIX,
        formats=TEXT_FORMATS,
        options=options,
    )
    try:
        keys, _ = text_column_values(frame, **options)
    except BaseException:
        upload_files_remove(job)
        raise
    job.stage = "embedding"
    job.total_rows = len(keys)
    with transaction.atomic():
        job.save()
        transaction.on_commit(lambda: text_embed_enqueue(job.pk))
    return job


def text_embed_enqueue(import_id: int) -> None:
    import_enqueue(import_id, EMBED_TASK)


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
    """The vectors embedded so far (float32, row after row), next to the upload."""
    return Path(job.file.path).with_name("vectors.f32")


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
        )
    except InputFileError as exc:
        _fail(job, str(exc))
        return "failed"
    except Exception as exc:
        _fail(job, f"{type(exc).__name__}: {exc}")
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
        status=Status.FAILED, error=error[:2000], finished_at=timezone.now()
    )
    _remove_job_files(job)
