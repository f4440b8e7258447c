"""A finished audit is reported to the study's webhooks (``audit.done``), with its counts."""

from __future__ import annotations

import pytest

from annotation.models import Webhook, WebhookDelivery
from annotation.webhooks import delivery
from learning.audits import run, services
from tests.annotation.webhook_receiver import Receiver, verified

from .conftest import csv_upload, twin_scores

pytestmark = pytest.mark.django_db


def test_a_finished_audit_is_delivered_to_the_webhooks_that_asked(twins, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    study = twins["study"]
    with Receiver() as receiver:
        hook = Webhook.objects.create(study=study, url=receiver.url, events=["audit.done"])
        Webhook.objects.create(study=study, url=receiver.url, events=["version.published"])
        audit = services.audit_create(
            user=twins["users"]["reviewer"],
            study=study,
            upload=csv_upload(twin_scores(twins["frame"], sex=True)),
            name="uses sex",
        )
        assert not WebhookDelivery.objects.exists()  # queued is not done
        assert run.audit_run(audit_id=audit.pk) == "done"
        (row,) = WebhookDelivery.objects.all()
        assert delivery.deliver(row.pk) == "delivered"
    audit.refresh_from_db()
    (document,) = [verified(request, hook.secret) for request in receiver.requests]
    assert document["event"] == "audit.done"
    assert document["data"] == {
        "audit": audit.pk,
        "name": "uses sex",
        "violations": audit.violation_count,
    }
    assert audit.violation_count > 0
