"""A study's webhooks: register, switch off or on, remove, send a test event (admins only,
audited). The address is checked when it is registered and again at every delivery."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.access import Action, require
from annotation.events import deliveries_create
from annotation.models import (
    MAX_WEBHOOKS_PER_STUDY,
    SUBSCRIBABLE,
    Study,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
)
from audit.models import AuditEvent
from audit.services import audit_record
from common.errors import Conflict, InvalidInput

from .delivery import UnsafeUrl, url_check

MANAGE_ONLY = "Only an admin of the study can change its webhooks."
EVENT_NAMES = {name for name, _ in SUBSCRIBABLE}


def _events_clean(events) -> list[str]:
    chosen = sorted({str(event) for event in events or []})
    unknown = [event for event in chosen if event not in EVENT_NAMES]
    if unknown:
        raise InvalidInput(f"Unknown event {unknown[0]!r}; choose from {sorted(EVENT_NAMES)}.")
    if not chosen:
        raise InvalidInput("Choose at least one event.")
    return chosen


def webhook_create(*, user, study: Study, url: str, events) -> Webhook:
    require(user, study, Action.MANAGE, MANAGE_ONLY)
    chosen = _events_clean(events)
    if len(url) > 500:
        raise InvalidInput("The URL is longer than 500 characters.")
    try:
        url_check(url)
    except UnsafeUrl as refused:
        raise InvalidInput(f"This URL cannot receive webhooks: {refused}.") from None
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()  # the count below holds
        if Webhook.objects.filter(study=study).count() >= MAX_WEBHOOKS_PER_STUDY:
            raise Conflict(f"A study has at most {MAX_WEBHOOKS_PER_STUDY} webhooks.")
        hook = Webhook.objects.create(study=study, url=url, events=chosen, created_by=user)
        audit_record(
            action=AuditEvent.Action.WEBHOOK_CHANGE,
            target=hook,
            study_id=study.pk,
            detail={"change": "created", "url": url, "events": chosen},
        )
    return hook


def webhook_switch(*, user, hook: Webhook, active: bool) -> Webhook:
    """Stop (or resume) sending events to a webhook; pending deliveries wait while it is off."""
    require(user, hook.study_id, Action.MANAGE, MANAGE_ONLY)
    with transaction.atomic():
        Webhook.objects.filter(pk=hook.pk).update(active=active)
        hook.active = active
        audit_record(
            action=AuditEvent.Action.WEBHOOK_CHANGE,
            target=hook,
            study_id=hook.study_id,
            detail={"change": "resumed" if active else "paused", "url": hook.url},
        )
    return hook


def webhook_remove(*, user, hook: Webhook) -> None:
    """Remove a webhook and its delivery log."""
    require(user, hook.study_id, Action.MANAGE, MANAGE_ONLY)
    with transaction.atomic():
        audit_record(
            action=AuditEvent.Action.WEBHOOK_CHANGE,
            target=hook,
            study_id=hook.study_id,
            detail={"change": "removed", "url": hook.url},
        )
        hook.delete()


def webhook_test(*, user, hook: Webhook) -> WebhookDelivery:
    """Queue a ``test`` event to one webhook, whatever events it asked for (a paused webhook
    receives it when it is resumed)."""
    require(user, hook.study_id, Action.MANAGE, MANAGE_ONLY)
    payload = {
        "event": str(WebhookEvent.TEST),
        "study": hook.study_id,
        "occurred_at": timezone.now().isoformat(),
        "data": {"requested_by": user.get_username(), "webhook": hook.pk},
    }
    with transaction.atomic():
        (delivery,) = deliveries_create([hook], event=WebhookEvent.TEST, payload=payload)
    return delivery
