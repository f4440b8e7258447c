"""The spaces sweep (``spaces.sweep``, queued by every worker): abandoned uploads expire and their
files go, lost imports are sent again, leftover files are deleted (issue 26, finding 7)."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from fairmetric_site import celery as site_celery
from spaces import sweep
from spaces import tasks as space_tasks
from spaces.models import EmbeddingImport
from tests.annotation.factories import make_space

Status = EmbeddingImport.Status
HOURS = 24


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(sweep, "import_enqueue", lambda pk, task: calls.append((pk, task)))
    return calls


def upload(name: str, fmt: str, *, age: timedelta, **fields) -> EmbeddingImport:
    """An import row whose file is ``uploads/<name>/t.csv``, created ``age`` ago."""
    job = EmbeddingImport(name=name, format=fmt, **fields)
    job.file.name = f"uploads/{name}/t.csv"
    os.makedirs(os.path.dirname(job.file.path), exist_ok=True)
    with open(job.file.path, "wb") as f:
        f.write(b"a,b\n1,2\n")
    job.save()
    EmbeddingImport.objects.filter(pk=job.pk).update(created_at=timezone.now() - age)
    return job


def run():
    return sweep.uploads_sweep(space_tasks.RESUMABLE)


@pytest.mark.django_db
def test_an_upload_left_pending_expires_and_its_files_go(media_root, settings, sent):
    settings.UPLOAD_PENDING_HOURS = HOURS
    old = upload("old", "records-csv", age=timedelta(hours=HOURS + 1), stage="columns")
    fresh = upload("fresh", "records-csv", age=timedelta(hours=1), stage="columns")
    assert run()["expired"] == 1
    old.refresh_from_db()
    fresh.refresh_from_db()
    assert old.status == Status.FAILED
    assert old.error.startswith("expired: still pending after 24 hours (UPLOAD_PENDING_HOURS)")
    assert not (media_root / "uploads" / "old").exists()
    assert fresh.status == Status.PENDING
    assert (media_root / "uploads" / "fresh" / "t.csv").exists()
    assert sent == []  # waiting for a person: never resent
    assert run()["expired"] == 0


@pytest.mark.django_db
def test_lost_imports_are_sent_again_once_per_period(media_root, sent):
    queued = upload("queued", "records-csv", age=timedelta(minutes=30), stage="queued")
    vectors = upload("vectors", "auto", age=timedelta(minutes=30))
    texts = upload("texts", "texts-csv", age=timedelta(minutes=30), stage="embedding")
    young = upload("young", "auto", age=timedelta(minutes=1))
    assert run()["resent"] == 3
    assert sorted(sent) == sorted(
        [
            (queued.pk, "spaces.import_records"),
            (vectors.pk, "annotation.import_embeddings"),
            (texts.pk, "spaces.embed_texts"),
        ]
    )
    assert young.pk not in {pk for pk, _ in sent}
    sent.clear()
    assert run()["resent"] == 0  # sent a moment ago
    assert sent == []


@pytest.mark.django_db
def test_a_dead_workers_import_is_resumed_then_failed_after_three_starts(media_root, sent):
    running = upload("running", "auto", age=timedelta(hours=2), status=Status.RUNNING)
    EmbeddingImport.objects.filter(pk=running.pk).update(
        started_at=timezone.now() - timedelta(hours=1), attempts=1
    )
    assert run()["resent"] == 1
    EmbeddingImport.objects.filter(pk=running.pk).update(attempts=3)
    assert run()["failed"] == 1
    running.refresh_from_db()
    assert running.status == Status.FAILED
    assert running.error == "the worker stopped 3 times while importing this file"
    assert not (media_root / "uploads" / "running").exists()


@pytest.mark.django_db
def test_leftover_folders_and_matrices_are_deleted(media_root, settings, sent):
    settings.UPLOAD_PENDING_HOURS = HOURS
    live = upload("live", "records-csv", age=timedelta(hours=HOURS + 2), stage="columns")
    EmbeddingImport.objects.filter(pk=live.pk).update(started_at=timezone.now())
    orphan = media_root / "uploads" / "orphan"
    orphan.mkdir(parents=True)
    (orphan / "t.csv").write_bytes(b"x")
    space = make_space(name="kept")
    stray = media_root / "spaces" / "stray.npy.part"
    stray.write_bytes(b"x")
    long_ago = time.time() - (HOURS + 1) * 3600
    kept = media_root / space.matrix.name
    for path in (orphan, orphan / "t.csv", stray, media_root / "uploads" / "live", kept):
        os.utime(path, (long_ago, long_ago))
    assert run()["removed"] == 2
    assert not orphan.exists()
    assert not stray.exists()
    assert (media_root / "uploads" / "live" / "t.csv").exists()  # still pending
    assert kept.exists()  # a space's matrix


def test_every_worker_queues_the_spaces_and_annotation_sweeps_with_the_refit_sweep(monkeypatch):
    sent = []
    monkeypatch.setattr(site_celery.app, "send_task", lambda name, **kw: sent.append(name))
    site_celery.sweep_send()
    assert sent == ["learning.sweep", "spaces.sweep", "annotation.sweep"]
    assert space_tasks.sweep_uploads_task.name == "spaces.sweep"
