"""Celery tasks of annotation: sending webhook deliveries and sweeping the ones left pending
(``annotation/webhooks/delivery.py``). Both are idempotent — an attempt claims its delivery —
so they are acknowledged late."""

from __future__ import annotations

from celery import shared_task

from annotation.events import DELIVER_TASK
from annotation.webhooks import delivery

SWEEP_TASK = "annotation.webhook_sweep"


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


@shared_task(name=SWEEP_TASK, ignore_result=True, soft_time_limit=60, time_limit=90)
def webhook_sweep() -> int:
    """Queue the due pending deliveries (lost tasks, a broker that was down)."""
    return delivery.deliveries_sweep()
