"""The import page's confirm step as a job (issue #39, items 2 and 8): one import per preview
whatever the clicks (an atomic claim), stored by the worker under a lease, nothing lost when the
broker is down (the sweep sends it again), old previews removed
(``annotation/setup/imports/jobs.py``).

Before: five simultaneous confirmations of one 100-pair preview stored 500 rows — ``_confirm``
read the file, stored it and only then removed it, in the request."""
# ruff: noqa: F811 - the live server's fixtures are imported from test_limits_concurrency

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from threading import Barrier
from urllib.parse import urlencode

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import FeedbackImport, Membership, PairJudgment
from annotation.setup.imports import jobs
from tests.annotation.factories import make_space, make_study, make_user
from tests.celery_support import app_pointed_at, free_port
from tests.conftest import require
from tests.security.test_limits_concurrency import _request, server, space  # noqa: F401

Status = FeedbackImport.Status
PAIRS = "key_a,key_b,label\n" + "".join(
    f"w{i % 79:03d},w{i % 79 + 1:03d},comparable\n"
    for i in range(100)  # (80 words)
)


def previewed(study, user, settings, content: str = PAIRS) -> tuple[Client, str]:
    client = Client()
    client.force_login(user)
    page = client.post(
        reverse("annotation:study-import", args=[study.pk]),
        {"file": SimpleUploadedFile("p.csv", content.encode()), "kind": "auto", "fmt": "auto"},
    )
    assert page.status_code == 200, page.content
    return client, client.session["feedback-import"]["token"]


def worker_runs() -> list[str]:
    queued = FeedbackImport.objects.filter(status=Status.PENDING).order_by("pk")
    return [jobs.import_run(import_id=pk) for pk in queued.values_list("pk", flat=True)]


@pytest.mark.django_db(transaction=True)
def test_five_simultaneous_confirmations_import_one_preview_once(server, space, settings):
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")
    study = make_study(space=space, name="Imports")
    admin = make_user("boss", study=study, role=Membership.Role.ADMIN)
    client, token = previewed(study, admin, settings)
    cookies = "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())
    csrf = "c" * 32
    body = f"confirm=1&token={token}&csrfmiddlewaretoken={csrf}".encode()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"{cookies}; csrftoken={csrf}",
    }
    url = server.url + reverse("annotation:study-import", args=[study.pk])
    barrier = Barrier(5)

    def confirm(_):
        barrier.wait()
        return _request(url, body, headers)

    with ThreadPoolExecutor(5) as pool:
        statuses = list(pool.map(confirm, range(5)))
    assert statuses.count(200) == 1, statuses  # queued (the redirect followed)
    # The others: 409 "confirmed already"; 400 "no longer available" for a request whose
    # session was read after the winner's response had forgotten the preview.
    assert set(statuses) <= {200, 409, 400}, statuses
    assert worker_runs() == ["done"]
    assert PairJudgment.objects.filter(study=study).count() == 100
    assert worker_runs() == []  # nothing left to import twice


@pytest.fixture
def admin_study(db, media_root):
    study = make_study(space=make_space(n_words=120), name="Imports")
    return study, make_user("boss", study=study, role=Membership.Role.ADMIN)


def test_a_confirmation_while_the_broker_is_down_waits_for_the_sweep(
    admin_study, settings, monkeypatch
):
    study, admin = admin_study
    client, token = previewed(study, admin, settings)
    with app_pointed_at(f"redis://127.0.0.1:{free_port()}/0"):  # nothing listens there
        page = client.post(
            reverse("annotation:study-import", args=[study.pk]), {"confirm": "1", "token": token}
        )
    assert page.status_code == 302  # answered at once
    job = FeedbackImport.objects.get(token=token)
    assert job.status == Status.PENDING  # kept, not failed
    FeedbackImport.objects.filter(pk=job.pk).update(
        queued_at=timezone.now() - jobs.RESEND_AFTER - timedelta(seconds=1)
    )
    sent = []  # the broker, back: the sweep's message recorded (as tests/spaces/test_sweep.py)
    monkeypatch.setattr(jobs, "import_enqueue", lambda pk: sent.append(pk) or True)
    assert jobs.imports_sweep()["resent"] == 1
    assert sent == [job.pk]
    assert worker_runs() == ["done"]
    assert PairJudgment.objects.filter(study=study).count() == 100


def test_a_dead_workers_import_is_taken_over_after_its_lease_and_stored_once(admin_study, settings):
    study, admin = admin_study
    client, token = previewed(study, admin, settings)
    client.post(
        reverse("annotation:study-import", args=[study.pk]), {"confirm": "1", "token": token}
    )
    job = FeedbackImport.objects.get(token=token)
    # A worker claimed it and died (its transaction rolled back: nothing stored).
    FeedbackImport.objects.filter(pk=job.pk).update(
        status=Status.RUNNING, started_at=timezone.now(), attempts=1
    )
    assert jobs.import_run(import_id=job.pk) == "busy"  # its lease still runs
    FeedbackImport.objects.filter(pk=job.pk).update(
        started_at=timezone.now() - jobs.LEASE - timedelta(seconds=1)
    )
    assert jobs.import_run(import_id=job.pk) == "done"
    assert jobs.import_run(import_id=job.pk) == "not run: done"  # a redelivered message
    assert PairJudgment.objects.filter(study=study).count() == 100
    job.refresh_from_db()
    assert (job.attempts, job.judgments) == (2, 100)
    assert not default_storage.exists(jobs.preview_name(token))


def test_an_import_that_kills_its_worker_fails_after_the_attempts(admin_study, settings):
    study, admin = admin_study
    _, token = previewed(study, admin, settings)
    job = FeedbackImport.objects.get(token=token)
    FeedbackImport.objects.filter(pk=job.pk).update(
        status=Status.RUNNING,
        attempts=jobs.MAX_ATTEMPTS,
        started_at=timezone.now() - jobs.LEASE - timedelta(seconds=1),
    )
    assert jobs.imports_sweep()["failed"] == 1
    job.refresh_from_db()
    assert job.status == Status.FAILED
    assert "stopped 3 times" in job.error
    assert not PairJudgment.objects.exists()


def test_old_previews_and_stray_files_are_removed(admin_study, settings):
    study, admin = admin_study
    _, old_token = previewed(study, admin, settings)
    _, fresh_token = previewed(study, admin, settings)
    FeedbackImport.objects.filter(token=old_token).update(
        created_at=timezone.now() - timedelta(hours=jobs.PREVIEW_HOURS, seconds=1)
    )
    stray = Path(settings.MEDIA_ROOT) / jobs.PREVIEW_DIR / ("0" * 32 + ".upload")
    stray.write_bytes(b"x")
    day_ago = time.time() - jobs.PREVIEW_HOURS * 3600 - 1
    os.utime(stray, (day_ago, day_ago))
    assert jobs.imports_sweep()["expired"] == 2
    assert not FeedbackImport.objects.filter(token=old_token).exists()
    assert not default_storage.exists(jobs.preview_name(old_token))
    assert not stray.exists()
    assert default_storage.exists(
        jobs.preview_name(fresh_token)
    )  # a preview of today waits for its click


GOLD = "".join(
    f"w{i:03d},w{i + 40:03d},{'comparable' if i % 2 else 'incomparable'}\n" for i in range(30)
)
CANDIDATES = "".join(f"w{i:03d},w{i + 1:03d}\n" for i in range(30))
KEYS = "".join(f"w{i:03d}\n" for i in range(50))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("page", "fields", "count"),
    [
        ("annotation:study-gold", {"text": GOLD, "confirm": "1"}, lambda s: s.gold_pairs.count()),
        ("annotation:study-pairs", {"text": CANDIDATES}, lambda s: s.candidate_pairs.count()),
        ("annotation:study-items", {"text": KEYS}, lambda s: s.pool_keys.count()),
    ],
    ids=["gold confirm", "candidate pairs", "pool keys"],
)
def test_the_other_set_up_uploads_store_once_under_five_simultaneous_posts(
    server, space, page, fields, count
):
    """The gold pairs' confirm step, candidate pairs and the pool's keys lock the study and
    compare with what is stored: five at once store each row once, and none answers 500."""
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")
    study = make_study(space=space, name="Uploads", pool="keys")
    admin = make_user("boss", study=study, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    cookies = "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())
    csrf = "c" * 32
    body = urlencode({**fields, "csrfmiddlewaretoken": csrf}).encode()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"{cookies}; csrftoken={csrf}",
    }
    if page != "annotation:study-items":  # pairs need their items in the pool
        study.pool_keys.set(space.items.all())
    url = server.url + reverse(page, args=[study.pk])
    barrier = Barrier(5)

    def post(_):
        barrier.wait()
        return _request(url, body, headers)

    with ThreadPoolExecutor(5) as pool:
        statuses = list(pool.map(post, range(5)))
    assert statuses == [200] * 5, statuses  # each stored or found stored (redirect followed)
    assert count(study) == (50 if page == "annotation:study-items" else 30)
