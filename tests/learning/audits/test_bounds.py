"""Audit inputs bounded (issue 39, items 1 and 3): the request checks the head and stores the file
as uploaded, the worker reads every row a chunk at a time; what an audit decodes to is bounded;
audits in flight are limited per user and per study (429, Retry-After); audits go to their own
queue, and one the broker lost is sent again by the sweep.

Before the fix the request read the whole file (a bad row far down was a 400 after seconds of
work, a 1,000,000-row file cost gigabytes), stored a ``.npz`` with every new record as JSON,
had no bound on rows × dimension nor on audits in flight, sent audits to the refits' queue, and
an audit posted while the broker was down was stored ``failed`` and never sent.
"""

from __future__ import annotations

import functools
import io
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from common.errors import InvalidInput, PayloadTooLarge, TooBusy
from common.queues import audit_queue
from learning import tasks
from learning.audits import inputs, run, services
from learning.models import AuditViolation, ModelAudit
from tests.celery_support import app_pointed_at

from .conftest import csv_upload, parquet_upload, twin_scores

pytestmark = pytest.mark.django_db


@pytest.fixture
def unsent(monkeypatch):
    """No broker: the tasks a commit would send are recorded (the real send has its own tests)."""
    sent = []
    monkeypatch.setattr(services, "audit_enqueue", sent.append)
    return sent


def create(world, upload, user="reviewer", **kwargs) -> ModelAudit:
    upload = upload if hasattr(upload, "read") else csv_upload(upload)
    return services.audit_create(
        user=world["users"][user], study=world["study"], upload=upload, **kwargs
    )


def long_scores(world, rows: int) -> pd.DataFrame:
    """``rows`` new records (every field of φ given) after the pool's own 80 items."""
    table = twin_scores(world["frame"], sex=True)
    table = table.join(world["frame"][["age", "job", "sex"]])
    extra = pd.DataFrame(
        {
            "key": [f"new{i:06d}" for i in range(rows)],
            "score": np.linspace(0, 1, rows),
            "decision": "no",
            "age": 30,
            "job": "clerk",
            "sex": "Male",
        }
    )
    return pd.concat([table, extra], ignore_index=True)


def test_a_parquet_too_big_to_audit_is_refused_from_its_footer(twins, settings, media_root):
    settings.AUDIT_MAX_DECODED_MB = 3  # 6 dimensions, k = 10: 2,064 bytes a row, 1,524 rows
    table = long_scores(twins, 3000)
    with pytest.raises(PayloadTooLarge, match=r"3,080 rows.*at most 1,524 \(AUDIT_MAX_DECODED_MB"):
        create(twins, parquet_upload(table))
    assert not ModelAudit.objects.exists()
    assert not (media_root / "audits").exists()
    create(twins, parquet_upload(table), k=3)  # 18 + 72 numbers a row: 4,369 fit


def test_one_key_repeated_is_refused_from_the_head(twins, media_root):
    table = pd.DataFrame({"key": ["p00F"] * 100_000, "score": 0.5})
    with pytest.raises(InvalidInput, match="A key appears more than once"):
        create(twins, parquet_upload(table))
    assert not (media_root / "audits").exists()


def test_the_request_reads_the_head_and_the_worker_every_row(twins, unsent):
    table = long_scores(twins, 1500).astype({"score": object})
    table.loc[1400, "score"] = "high"  # past the 1,000 rows the request reads
    audit = create(twins, table.to_csv(index=False))
    assert audit.status == ModelAudit.Status.QUEUED
    assert run.audit_run(audit_id=audit.pk) == "failed"
    audit.refresh_from_db()
    assert "Row 1401: the score must be a finite number" in audit.error


def test_the_upload_is_stored_as_it_came_and_new_records_read_back_in_chunks(
    twins, unsent, monkeypatch
):
    monkeypatch.setattr(inputs, "table_chunks", functools.partial(inputs.table_chunks, rows=50))
    table = long_scores(twins, 300)
    table.loc[80:, "age"] = 21 + np.arange(300) % 40
    buffer = io.BytesIO()
    table.to_parquet(buffer, index=False)
    audit = create(twins, SimpleUploadedFile("s.parquet", buffer.getvalue()), k=3)
    assert audit.predictions.name.endswith(".parquet")
    assert audit.predictions.read() == buffer.getvalue()  # no per-record JSON beside it
    assert (audit.item_count, audit.has_decision) == (380, True)
    assert run.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    assert audit.new_records == 300
    new = AuditViolation.objects.filter(audit=audit, item_b__isnull=True)
    assert new.exists()
    by_key = table.set_index("key")
    for violation in new[:50]:  # each new record's fields, from its own row of the file
        expected = by_key.loc[violation.key_b]
        assert violation.record_b["age"] == expected["age"]
        assert violation.record_b["job"] == expected["job"]
        assert violation.score_b == pytest.approx(expected["score"])


def test_a_key_repeated_in_a_later_chunk_fails_the_audit_naming_the_row(twins, unsent, monkeypatch):
    monkeypatch.setattr(inputs, "table_chunks", functools.partial(inputs.table_chunks, rows=100))
    table = long_scores(twins, 1500)
    table.loc[1200, "key"] = "p03M"
    audit = create(twins, table.to_csv(index=False))
    assert run.audit_run(audit_id=audit.pk) == "failed"
    audit.refresh_from_db()
    assert "A key appears more than once (row 1201 and an earlier row): 'p03M'" in audit.error


def test_a_csv_too_big_to_audit_fails_in_the_worker_saying_why(twins, settings, unsent):
    settings.AUDIT_MAX_DECODED_MB = 3  # 1,524 rows at k = 10
    audit = create(twins, long_scores(twins, 3000).to_csv(index=False))  # the head is fine
    assert run.audit_run(audit_id=audit.pk) == "failed"
    audit.refresh_from_db()
    assert "AUDIT_MAX_DECODED_MB" in audit.error


def test_audits_in_flight_are_limited_per_user_and_per_study(twins, settings, unsent):
    settings.AUDIT_MAX_IN_FLIGHT_USER, settings.AUDIT_MAX_IN_FLIGHT_STUDY = 2, 3
    scores = twin_scores(twins["frame"], sex=True)
    first = create(twins, scores, k=3)
    create(twins, scores, k=3)
    with pytest.raises(TooBusy, match="You have 2 audit") as refused:
        create(twins, scores, k=3)
    assert refused.value.retry_after == services.RETRY_AFTER
    create(twins, scores, user="admin", k=3)
    with pytest.raises(TooBusy, match="This study has 3 audit"):
        create(twins, scores, user="admin", k=3)
    assert ModelAudit.objects.count() == 3
    assert run.audit_run(audit_id=first.pk) == "done"  # a done audit frees its place
    create(twins, scores, k=3)


def test_the_api_answers_429_with_retry_after_and_the_page_a_form_error(twins, settings, unsent):
    settings.AUDIT_MAX_IN_FLIGHT_USER = 1
    scores = twin_scores(twins["frame"], sex=True)
    api = APIClient()
    api.force_authenticate(twins["users"]["reviewer"])
    url = reverse("api-audits", args=[twins["study"].pk])
    first = api.post(url, {"predictions": csv_upload(scores), "k": 3}, format="multipart")
    assert first.status_code == 201
    assert first.json()["status"] == "queued"
    second = api.post(url, {"predictions": csv_upload(scores), "k": 3}, format="multipart")
    assert second.status_code == 429
    assert second["Retry-After"] == str(services.RETRY_AFTER)
    assert "queued or running" in second.json()["detail"]
    page = reverse("learning:audits", args=[twins["study"].pk])
    browser = Client()
    browser.force_login(twins["users"]["reviewer"])
    answer = browser.post(page, {"predictions": csv_upload(scores), "k": 3})
    assert answer.status_code == 429
    assert answer["Retry-After"]
    assert b"queued or running" in answer.content
    assert ModelAudit.objects.count() == 1


@pytest.mark.services
def test_audits_go_to_their_own_queue_and_one_the_broker_lost_is_sent_again(
    twins, private_redis, django_capture_on_commit_callbacks
):
    broker = redis.Redis.from_url(private_redis.url)
    with app_pointed_at(private_redis.url):
        with django_capture_on_commit_callbacks(execute=True):
            audit = create(twins, twin_scores(twins["frame"], sex=True), k=3)
        assert broker.llen(audit_queue()) == 1
        assert broker.llen("celery") == 0  # the refits' queue
        audit.refresh_from_db()
        assert audit.lease_until > timezone.now()  # not sent again before AUDIT_LEASE_SECONDS
        assert services.audits_resend() == []
        private_redis.stop()  # no persistence: the message is lost
        private_redis.start()
        assert broker.llen(audit_queue()) == 0
        ModelAudit.objects.filter(pk=audit.pk).update(lease_until=timezone.now())
        tasks.sweep_stale_studies()  # the periodic sweep every worker runs
        assert broker.llen(audit_queue()) == 1
        assert services.audits_resend() == []  # sent: not again before AUDIT_LEASE_SECONDS


@pytest.mark.services
def test_an_audit_posted_while_the_broker_is_down_stays_queued_and_the_sweep_sends_it(
    twins, private_redis, django_capture_on_commit_callbacks
):
    broker = redis.Redis.from_url(private_redis.url)
    with app_pointed_at(private_redis.url):
        private_redis.stop()
        with django_capture_on_commit_callbacks(execute=True):
            audit = create(twins, twin_scores(twins["frame"], sex=True), k=3)
        audit.refresh_from_db()
        assert (audit.status, audit.lease_until) == (ModelAudit.Status.QUEUED, None)
        private_redis.start()
        assert services.audits_resend() == [audit.pk]
        assert broker.llen(audit_queue()) == 1
        # a running audit whose worker died (its lease ran out) is sent again too
        broker.delete(audit_queue())
        ModelAudit.objects.filter(pk=audit.pk).update(
            status="running", lease_until=timezone.now() - timedelta(seconds=1)
        )
        assert services.audits_resend() == [audit.pk]
        assert broker.llen(audit_queue()) == 1
    assert run.audit_run(audit_id=audit.pk) == "done"
