"""Celery tasks of the annotation app (autodiscovered here): the import page's feedback imports
(``annotation.setup.imports.jobs``), webhook deliveries (``annotation/webhooks/delivery.py``),
and their sweep. Each is idempotent — a run claims its row — so they are acknowledged late."""

from __future__ import annotations

from celery import shared_task

from annotation.events import DELIVER_TASK
from annotation.setup.imports import jobs
from annotation.webhooks import delivery


@shared_task(
    bind=True,
    name=jobs.IMPORT_TASK,
    acks_late=True,  # idempotent: the run claims its row; a redelivery finds it claimed or done
    reject_on_worker_lost=True,
    max_retries=5,
)
def feedback_import_task(self, import_id: int) -> str:
    """Store the confirmed feedback import ``import_id``."""
    result = jobs.import_run(import_id=import_id)
    if result == "busy":  # another worker holds it, or one died: look again after the lease
        raise self.retry(countdown=jobs.LEASE.total_seconds())
    return result


@shared_task(
    name=DELIVER_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=120,
    time_limit=150,
)
def webhook_deliver(delivery_id: int) -> str:
    """One attempt at a delivery; a failed one queues its own retry after its backoff."""
    return delivery.deliver(delivery_id)


@shared_task(name=jobs.SWEEP_TASK, ignore_result=True, soft_time_limit=240, time_limit=300)
def feedback_imports_sweep_task() -> dict:
    """Re-send lost feedback imports, expire old previews; queue the webhook deliveries that
    are due (lost tasks, a broker that was down)."""
    return jobs.imports_sweep() | {"webhooks": delivery.deliveries_sweep()}
