"""Celery tasks of the spaces app: importing uploaded embedding files."""

from __future__ import annotations

from celery import shared_task

from .uploads import IMPORT_TASK, TIME_LIMIT, embedding_import_run


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
