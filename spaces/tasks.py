"""Celery tasks of the spaces app (autodiscovered here): importing uploaded embedding files (the
body: ``spaces.vectors.uploads.embedding_import_run``), importing record tables
(``spaces.records.importing.record_import_run``), embedding texts
(``spaces.texts.embedding.text_embed_step``) and the sweep of uploads (``spaces.sweep``).
The names of the first and third are kept as they were: messages already queued run under them.
"""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.db.models import Q

from spaces import sweep
from spaces.records import importing as records
from spaces.records.uploads import COLUMNS, RECORDS_PREFIX
from spaces.records.uploads import IMPORT_TASK as RECORDS_TASK
from spaces.texts.embedding import LEASE, text_embed_step
from spaces.texts.uploads import EMBED_TASK, TEXTS_PREFIX, text_embed_enqueue
from spaces.vectors.uploads import IMPORT_TASK, TIME_LIMIT, embedding_import_run

SWEEP_TASK = "spaces.sweep"
# What the sweep resumes, kind by kind (spaces.sweep knows none of them).
RESUMABLE = (
    sweep.Resumable(
        match=Q(format__startswith=RECORDS_PREFIX),
        task=RECORDS_TASK,
        lease=records.LEASE,
        waiting=(COLUMNS,),
        max_attempts=None,  # the task counts its own starts (records.MAX_ATTEMPTS)
    ),
    sweep.Resumable(
        match=Q(format__startswith=TEXTS_PREFIX), task=EMBED_TASK, lease=LEASE, max_attempts=None
    ),
    sweep.Resumable(
        match=~Q(format__startswith=RECORDS_PREFIX) & ~Q(format__startswith=TEXTS_PREFIX),
        task=IMPORT_TASK,
        lease=timedelta(seconds=TIME_LIMIT),
    ),
)


@shared_task(
    # The name it had in the annotation app, kept: messages already queued under it still run.
    name=IMPORT_TASK,
    acks_late=True,  # idempotent: the run claims its row, a redelivery finds it claimed or done
    reject_on_worker_lost=True,
    soft_time_limit=TIME_LIMIT - 300,
    time_limit=TIME_LIMIT,
)
def import_embeddings_task(import_id: int) -> str:
    """Import the uploaded file of ``EmbeddingImport`` ``import_id`` as a new space."""
    return embedding_import_run(import_id=import_id)


@shared_task(
    bind=True,
    name=RECORDS_TASK,
    acks_late=True,  # idempotent: the run claims its row; a redelivery finds it claimed or done
    reject_on_worker_lost=True,
    max_retries=5,
    soft_time_limit=TIME_LIMIT - 300,
    time_limit=TIME_LIMIT,
)
def import_records_task(self, import_id: int) -> str:
    """Import the record table of ``EmbeddingImport`` ``import_id`` (its columns chosen)."""
    result = records.record_import_run(import_id=import_id)
    if result == "busy":  # another worker holds it, or one died: look again after the lease
        raise self.retry(countdown=records.LEASE.total_seconds())
    return result


@shared_task(
    bind=True,
    name=EMBED_TASK,
    acks_late=True,  # resumable: a redelivered slice continues from the stored progress
    reject_on_worker_lost=True,
    max_retries=30,
    soft_time_limit=TIME_LIMIT - 300,
    time_limit=TIME_LIMIT,
)
def embed_texts_task(self, import_id: int) -> str:
    """Embed one slice of a text upload; queue the next slice, or wait out a live lease."""
    result = text_embed_step(import_id=import_id)
    if result == "more":
        text_embed_enqueue(import_id)
    elif result == "busy":  # another worker holds it, or one died: look again after the lease
        raise self.retry(countdown=LEASE.total_seconds())
    return result


@shared_task(name=SWEEP_TASK, ignore_result=True, soft_time_limit=240, time_limit=300)
def sweep_uploads_task() -> dict:
    """Expire abandoned uploads, resume lost imports, delete leftover files."""
    return sweep.uploads_sweep(RESUMABLE)
