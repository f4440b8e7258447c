"""Celery tasks of the spaces app (autodiscovered here): importing uploaded embedding files (the
body: ``spaces.vectors.uploads.embedding_import_run``) and embedding texts
(``spaces.texts.embedding.text_embed_step``). Their names are kept as they were: messages already
queued run under them."""

from __future__ import annotations

from celery import shared_task

from spaces.texts.embedding import LEASE, text_embed_step
from spaces.texts.uploads import EMBED_TASK, text_embed_enqueue
from spaces.vectors.uploads import IMPORT_TASK, TIME_LIMIT, embedding_import_run


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
