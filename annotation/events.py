"""A study's events for its webhooks: the one call every place that reports one makes.

:func:`study_event` runs inside the transaction of the change it reports (a publish, a finished
audit, an answer that reaches a target, an adjudication): it writes one pending
``WebhookDelivery`` per active webhook of the study that asked for the event, and queues each
delivery after the commit — so a rolled-back change sends nothing, and a delivery the broker
lost is still a pending row the sweep sends (``annotation/webhooks/delivery.py:
deliveries_sweep``). Learning reports its events through here too (it sits above annotation).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.facts import study_webhook_events
from annotation.models import Study, Webhook, WebhookDelivery, WebhookEvent
from annotation.selectors import progress_for

logger = logging.getLogger(__name__)
DELIVER_TASK = "annotation.webhook_deliver"  # by name: shared modules import no room


def delivery_send(delivery_id: int, *, countdown: float | None = None) -> None:
    """Queue one delivery; a broker error is logged (the row stays pending for the sweep)."""
    try:
        current_app.send_task(
            DELIVER_TASK,
            args=[delivery_id],
            countdown=countdown,
            queue=settings.CELERY_TASK_DEFAULT_QUEUE,
            ignore_result=True,
        )
    except Exception:
        logger.warning("could not queue webhook delivery %s", delivery_id, exc_info=True)


def deliveries_create(webhooks, *, event: str, payload: dict) -> list[WebhookDelivery]:
    """Pending deliveries of ``payload`` to ``webhooks``, each queued after the commit."""
    rows = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=hook, event=event, payload=payload) for hook in webhooks]
    )
    for row in rows:
        transaction.on_commit(lambda pk=row.pk: delivery_send(pk))
    return rows


def study_event(
    *, study_id: int, event: WebhookEvent | str, data: dict | Callable[[], dict]
) -> int:
    """Report ``event`` of a study with its ``data`` (or a function that reads it, called only
    when some webhook asked) to every active webhook that asked for it; returns how many
    deliveries were made (0 when none asked: a cached fact, no query)."""
    if str(event) not in study_webhook_events(study_id):
        return 0
    hooks = [
        hook
        for hook in Webhook.objects.filter(study_id=study_id, active=True)
        if event in (hook.events or [])
    ]
    if not hooks:
        return 0
    payload = {
        "event": str(event),
        "study": study_id,
        "occurred_at": timezone.now().isoformat(),
        "data": data() if callable(data) else data,
    }
    return len(deliveries_create(hooks, event=str(event), payload=payload))


def target_reached_report(*, study: Study, annotator, added: int) -> None:
    """After ``added`` new answers of ``annotator``: report ``annotator.target_reached`` when
    they took the annotator's count from below the target to it or past it (once per
    crossing; an undone answer and a new one cross it again)."""
    if added <= 0 or WebhookEvent.TARGET_REACHED not in study_webhook_events(study.pk):
        return
    progress = progress_for(study=study, user=annotator)
    if progress.answered - added < progress.target <= progress.answered:
        study_event(
            study_id=study.pk,
            event=WebhookEvent.TARGET_REACHED,
            data={
                "annotator": annotator.get_username(),
                "answered": progress.answered,
                "target": progress.target,
            },
        )
