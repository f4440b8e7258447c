"""Webhooks: URLs a study's admins register for events, and each delivery of an event to one.

An event (``annotation/events.py: study_event``) writes one :class:`WebhookDelivery` per active
webhook of the study that asked for it, in the transaction of the change it reports; a worker
sends it (``annotation/webhooks/delivery.py``): a JSON POST signed with HMAC-SHA256 under the
webhook's secret, retried with backoff until it is answered 2xx or ``WEBHOOK_MAX_ATTEMPTS`` is
reached. Every attempt's answer is kept on the row, for the delivery log page.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models

from .studies import Study


class WebhookEvent(models.TextChoices):
    VERSION_PUBLISHED = "version.published", "a metric version was published"
    AUDIT_DONE = "audit.done", "a model audit finished"
    TARGET_REACHED = "annotator.target_reached", "an annotator reached their target"
    DISAGREEMENT_RESOLVED = "disagreement.resolved", "a disagreement was resolved"
    TEST = "test", "a test event (the page's button)"


SUBSCRIBABLE = [choice for choice in WebhookEvent.choices if choice[0] != WebhookEvent.TEST]
MAX_WEBHOOKS_PER_STUDY = 20


def webhook_secret() -> str:
    return "whsec_" + secrets.token_hex(24)


class Webhook(models.Model):
    """A URL that receives a study's events of the kinds in ``events``."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    events = models.JSONField(default=list, help_text="Event names (WebhookEvent) to send.")
    secret = models.CharField(max_length=64, default=webhook_secret)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"webhook {self.url} of study {self.study_id}"


class WebhookDelivery(models.Model):
    """One event for one webhook: what was sent, how often, and the last answer."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed (gave up)"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(
        null=True, blank=True, help_text="Not sent before this time (a retry's backoff, a claim)."
    )
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True, help_text="The first 1,000 characters.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_due")]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook.url}: {self.status}"
