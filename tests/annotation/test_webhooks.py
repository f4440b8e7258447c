"""Webhooks (annotation/webhooks/, annotation/events.py): registered by admins, refused for
internal addresses, each event delivered to a real HTTP receiver as a signed JSON POST, a
delivery answered 500 retried after its backoff — also by a real worker — and logged."""

from __future__ import annotations

import uuid
from datetime import timedelta

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.events import study_event
from annotation.facts import study_webhook_events
from annotation.labelling.services import judgment_create
from annotation.models import Webhook, WebhookDelivery
from annotation.review.services import adjudicate
from annotation.webhooks import delivery, services
from annotation.webhooks.delivery import UnsafeUrl, url_check
from audit.models import AuditEvent
from learning.versions.storage import version_publish
from tests.celery_support import app_pointed_at, wait_for, worker_database_url

from .factories import make_metric_version
from .webhook_receiver import Receiver, verified

ALL = ["annotator.target_reached", "audit.done", "disagreement.resolved", "version.published"]


@pytest.fixture
def local(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on loopback


@pytest.fixture
def sends(monkeypatch) -> list:
    """The deliveries a failed attempt queues again, with their countdowns."""
    queued: list = []
    monkeypatch.setattr(
        delivery, "delivery_send", lambda pk, countdown=None: queued.append((pk, countdown))
    )
    return queued


def answer(study, user, a, b, label="comparable"):
    return judgment_create(
        study=study,
        annotator=user,
        item_a_id=a.pk,
        item_b_id=b.pk,
        label=label,
        client_id=uuid.uuid4(),
    )


def deliver_pending() -> list[str]:
    pending = WebhookDelivery.objects.filter(status="pending").order_by("id")
    return [delivery.deliver(pk) for pk in pending.values_list("pk", flat=True)]


def due_now(row: WebhookDelivery) -> None:
    past = timezone.now() - timedelta(minutes=1)
    WebhookDelivery.objects.filter(pk=row.pk).update(next_attempt_at=past, created_at=past)


def test_urls_that_could_reach_the_apps_own_network_are_refused(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    refused = [
        "ftp://93.184.216.34/x",
        "http://127.0.0.1:8000/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://user:pw@93.184.216.34/",
        "http://93.184.216.34:99999/",
        "http:///nohost",
    ]
    for url in refused:
        with pytest.raises(UnsafeUrl):
            url_check(url)
    target = url_check("http://93.184.216.34/hook?x=1")
    assert (target.address, target.port, target.path) == ("93.184.216.34", 80, "/hook?x=1")
    assert url_check("http://127.0.0.1:9/", allow_private=True).address == "127.0.0.1"


def test_admins_register_public_urls_reviewers_read_annotators_are_refused(
    study, study_admin, reviewer, annotator
):
    page = reverse("annotation:study-webhooks", args=[study.pk])
    admin = Client()
    admin.force_login(study_admin)
    response = admin.post(page, {"url": "http://127.0.0.1:8000/x", "events": ["audit.done"]})
    assert response.status_code == 400
    assert "internal address" in response.content.decode()
    response = admin.post(page, {"url": "https://93.184.216.34/hook", "events": ["nope"]})
    assert response.status_code == 400
    assert not Webhook.objects.exists()

    events = ["version.published", "audit.done"]
    response = admin.post(page, {"url": "https://93.184.216.34/hook", "events": events})
    assert response.status_code == 302
    hook = Webhook.objects.get()
    assert hook.events == ["audit.done", "version.published"]
    assert hook.secret.startswith("whsec_")
    assert hook.created_by == study_admin
    assert hook.secret in admin.get(page).content.decode()
    logged = AuditEvent.objects.get(action=AuditEvent.Action.WEBHOOK_CHANGE)
    assert logged.detail["change"] == "created"
    assert logged.study_id == study.pk

    reader = Client()
    reader.force_login(reviewer)
    body = reader.get(page).content.decode()
    assert hook.url in body
    assert hook.secret not in body
    assert (
        reader.post(page, {"url": "https://93.184.216.34/b", "events": events}).status_code == 403
    )
    action = reverse("annotation:study-webhook", args=[study.pk, hook.pk])
    assert reader.post(action, {"action": "remove"}).status_code == 403
    other = Client()
    other.force_login(annotator)
    assert other.get(page).status_code == 403
    assert Webhook.objects.count() == 1


def test_every_event_reaches_the_receiver_signed_once(
    local, study, items, study_admin, annotator, other_annotator
):
    study.target_per_annotator = 2
    study.save()
    with Receiver() as receiver:
        hook = Webhook.objects.create(study=study, url=receiver.url, events=ALL)
        answer(study, annotator, items[0], items[1])
        answer(study, other_annotator, items[0], items[1], "incomparable")
        answer(study, annotator, items[2], items[3])  # the annotator's second: the target
        answer(study, annotator, items[4], items[5])  # past it: no second event
        adjudicate(
            study=study,
            user=study_admin,
            item_a_id=items[0].pk,
            item_b_id=items[1].pk,
            label="comparable",
        )
        version = make_metric_version(study=study, method="explore", sigma=np.eye(4))
        version_publish(version_id=version.pk, user=study_admin, reason="a webhook test")
        assert deliver_pending() == ["delivered"] * 3
    assert receiver.events() == [
        "annotator.target_reached",
        "disagreement.resolved",
        "version.published",
    ]
    documents = [verified(request, hook.secret) for request in receiver.requests]
    for request, document in zip(receiver.requests, documents, strict=True):
        assert request["path"] == "/hook"
        assert request["headers"]["X-Fairmetric-Delivery"] == document["id"]
        assert document["study"] == study.pk
    assert documents[0]["data"] == {"annotator": "ann", "answered": 2, "target": 2}
    assert documents[1]["data"]["label"] == "comparable"
    assert {documents[1]["data"]["item_a"], documents[1]["data"]["item_b"]} == {
        items[0].key,
        items[1].key,
    }
    assert documents[2]["data"]["version"] == version.pk
    assert documents[2]["data"]["verdict"] == "cannot tell yet"
    assert documents[2]["data"]["override_reason"] == "a webhook test"
    assert documents[2]["data"]["automatic"] is False
    with pytest.raises(AssertionError):
        verified(receiver.requests[0], "whsec_not-the-secret")
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_only_the_events_a_webhook_asked_for_are_sent(local, study, items, annotator, study_admin):
    Webhook.objects.create(study=study, url="http://127.0.0.1:9/", events=["audit.done"])
    study.target_per_annotator = 1
    study.save()
    answer(study, annotator, items[0], items[1])
    version = make_metric_version(study=study, method="face", sigma=np.eye(4))
    version_publish(version_id=version.pk, user=None, reason="only audit.done asked", by="test")
    assert not WebhookDelivery.objects.exists()


def test_a_study_without_webhooks_costs_an_event_no_query(study, django_assert_num_queries):
    assert study_webhook_events(study.pk) == frozenset()  # read once, then cached
    with django_assert_num_queries(0):
        assert study_event(study_id=study.pk, event="version.published", data=lambda: 1 / 0) == 0


def test_a_delivery_answered_500_is_retried_after_its_backoff_until_delivered(
    local, study, study_admin, settings, sends
):
    settings.WEBHOOK_RETRY_SECONDS = 30
    with Receiver([500, 503]) as receiver:
        hook = Webhook.objects.create(study=study, url=receiver.url, events=["audit.done"])
        row = services.webhook_test(user=study_admin, hook=hook)
        assert delivery.deliver(row.pk) == "retry"
        row.refresh_from_db()
        assert (row.status, row.attempts, row.response_status) == ("pending", 1, 500)
        assert row.response_body == "answered 500"
        assert 28 <= (row.next_attempt_at - timezone.now()).total_seconds() <= 30
        assert sends == [(row.pk, 30)]
        assert delivery.deliver(row.pk) == "skipped"  # not due yet
        assert delivery.deliveries_sweep() == 0
        due_now(row)
        assert delivery.deliveries_sweep() == 1  # a lost retry is found by the sweep
        assert delivery.deliver(row.pk) == "retry"
        assert sends[-1] == (row.pk, 60)  # the backoff doubles
        due_now(row)
        assert delivery.deliver(row.pk) == "delivered"
    row.refresh_from_db()
    assert (row.status, row.attempts, row.response_status, row.error) == ("delivered", 3, 200, "")
    assert len({r["headers"]["X-Fairmetric-Delivery"] for r in receiver.requests}) == 1
    assert receiver.events() == ["test"] * 3


def test_a_delivery_gives_up_after_the_last_attempt_and_says_why(
    local, study, study_admin, settings, sends
):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    with Receiver() as receiver:
        url = receiver.url
    hook = Webhook.objects.create(study=study, url=url, events=["audit.done"])  # nobody listens
    row = services.webhook_test(user=study_admin, hook=hook)
    assert delivery.deliver(row.pk) == "retry"
    due_now(row)
    assert delivery.deliver(row.pk) == "failed"
    row.refresh_from_db()
    assert row.status == "failed"
    assert row.attempts == 2
    assert "Connection" in row.error
    assert len(sends) == 1
    due_now(row)
    assert delivery.deliver(row.pk) == "skipped"
    assert delivery.deliveries_sweep() == 0


def test_an_address_refused_at_delivery_time_is_not_contacted(study, study_admin, settings, sends):
    with Receiver() as receiver:
        settings.WEBHOOK_ALLOW_PRIVATE = False  # e.g. a DNS name that now points inside
        hook = Webhook.objects.create(study=study, url=receiver.url, events=["audit.done"])
        row = services.webhook_test(user=study_admin, hook=hook)
        assert delivery.deliver(row.pk) == "retry"
    row.refresh_from_db()
    assert "internal address" in row.error
    assert row.response_status is None
    assert receiver.requests == []


def test_a_paused_webhook_keeps_its_deliveries_until_resumed(local, study, study_admin, sends):
    with Receiver() as receiver:
        hook = Webhook.objects.create(study=study, url=receiver.url, events=["audit.done"])
        page = Client()
        page.force_login(study_admin)
        action = reverse("annotation:study-webhook", args=[study.pk, hook.pk])
        assert page.post(action, {"action": "explode"}).status_code == 400
        assert page.post(action, {"action": "pause"}).status_code == 302
        assert page.post(action, {"action": "test"}).status_code == 302
        row = WebhookDelivery.objects.get()
        assert delivery.deliver(row.pk) == "skipped"
        assert study_event(study_id=study.pk, event="audit.done", data={}) == 0
        page.post(action, {"action": "resume"})
        assert delivery.deliver(row.pk) == "delivered"
        log = page.get(reverse("annotation:study-webhooks", args=[study.pk])).content.decode()
        assert str(row.delivery_id) in log
        assert "HTTP 200" in log
        assert page.post(action, {"action": "remove"}).status_code == 302
    assert not Webhook.objects.exists()
    assert not WebhookDelivery.objects.exists()
    changes = AuditEvent.objects.filter(action=AuditEvent.Action.WEBHOOK_CHANGE)
    assert [e.detail["change"] for e in changes.order_by("id")] == ["paused", "resumed", "removed"]


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_retries_a_500_and_delivers_the_test_event(
    settings, tmp_path, private_redis, start_worker, study, study_admin
):
    queue = f"hooks-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    settings.WEBHOOK_ALLOW_PRIVATE = True
    start_worker(
        queue=queue,
        DATABASE_URL=worker_database_url(),
        REDIS_URL=private_redis.url,
        CELERY_BROKER_URL=None,
        CELERY_RESULT_BACKEND=None,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        WEBHOOK_ALLOW_PRIVATE="1",
        WEBHOOK_RETRY_SECONDS="1",
        LEARNING_SWEEP_SECONDS="1",
        DEBUG="1",
    )
    with app_pointed_at(private_redis.url), Receiver([500]) as receiver:
        hook = Webhook.objects.create(study=study, url=receiver.url, events=["audit.done"])
        page = Client()
        page.force_login(study_admin)
        action = reverse("annotation:study-webhook", args=[study.pk, hook.pk])
        assert page.post(action, {"action": "test"}).status_code == 302
        row = WebhookDelivery.objects.get()
        wait_for(
            lambda: WebhookDelivery.objects.get(pk=row.pk).status == "delivered",
            60,
            "the delivery after one retry",
        )
    row.refresh_from_db()
    assert row.attempts == 2
    assert row.response_status == 200
    assert [verified(r, hook.secret)["event"] for r in receiver.requests] == ["test", "test"]
