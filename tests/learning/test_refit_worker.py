"""Refits through a REAL Celery worker process, a REAL Redis and the real test database.

Each test starts its own throwaway ``redis-server`` (never the machine's shared one, which a
test stops and restarts here) and a worker consuming a private queue, pointed at the same test
database and media folder as this process. The test process sends through its own Celery app,
re-pointed at that Redis for the duration of the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.db import transaction
from rest_framework.test import APIClient

from annotation.models import PairJudgment, Study
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits.scheduling import refit_clear_due, refit_request
from learning.versions.sigmas import sigma_of
from learning.versions.storage import metric_version_publish
from tests.celery_support import app_pointed_at, wait_for, worker_database_url

from .synthetic import judgments_create, simulate, space_create, study_create

pytestmark = [pytest.mark.services, pytest.mark.slow]


@pytest.fixture
def refit_rig(transactional_db, settings, tmp_path, private_redis, start_worker):
    """A private Redis, a worker factory for it, and this process pointed at both."""
    media = tmp_path / "media"
    media.mkdir()
    settings.MEDIA_ROOT = media
    queue = f"refit-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    env = {
        "DATABASE_URL": worker_database_url(),
        "MEDIA_ROOT": str(media),
        "REDIS_URL": private_redis.url,
        "CELERY_BROKER_URL": None,
        "CELERY_RESULT_BACKEND": None,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "LEARNING_LEASE_SECONDS": "3",
        "LEARNING_SWEEP_SECONDS": "1",
        "DEBUG": "1",
    }

    def start(*args: str, beat: bool = False, **overrides: str):
        extra = (
            ["--beat", "--schedule", str(tmp_path / f"beat-{time.monotonic_ns()}")] if beat else []
        )
        proc, _ = start_worker(*args, *extra, queue=queue, **{**env, **overrides})
        return proc

    with app_pointed_at(private_redis.url):
        yield start, media, private_redis


def study_with_space(
    media: Path, *, n_items: int = 80, d: int = 6, debounce: int = 2, **learning
) -> tuple[Study, list, list]:
    space, items = space_create(media, n_items=n_items, d=d, name=f"space-{n_items}-{d}")
    study, users = study_create(space, annotators=2)
    StudyLearningSettings.objects.create(study=study, debounce_seconds=debounce, **learning)
    return study, items, users


def ready_versions(study, method="explore"):
    return list(
        MetricVersion.objects.filter(study=study, method=method, status="ready").order_by("id")
    )


def top_judgment(study) -> int:
    return (
        PairJudgment.objects.filter(study=study)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


def post_answers(study, items, users, row_a, row_b, labels) -> list[int]:
    client = APIClient()
    names = {0: "incomparable", 1: "comparable"}
    statuses = []
    for number, (a, b, y) in enumerate(zip(row_a, row_b, labels, strict=True)):
        client.force_authenticate(users[number % len(users)])
        response = client.post(
            f"/api/studies/{study.pk}/judgments/",
            {
                "item_a": items[int(a)].pk,
                "item_b": items[int(b)].pk,
                "label": names[int(y)],
                "client_id": str(uuid.uuid4()),
            },
            format="json",
        )
        statuses.append(response.status_code)
    return statuses


def test_a_burst_of_200_answers_gives_few_versions_the_last_covering_all(refit_rig):
    start, media, _ = refit_rig
    study, items, users = study_with_space(media, debounce=2)
    start()
    a, b, y = simulate(np.load(media / "spaces/space-80-6.npy"), 200, seed=11)
    statuses = post_answers(study, items, users, a, b, y)
    assert statuses == [201] * 200
    top = top_judgment(study)
    wait_for(
        lambda: any(v.judgment_watermark == top for v in ready_versions(study)),
        90,
        "a ready EXPLORE version covering all 200 answers",
    )
    wait_for(
        lambda: any(v.judgment_watermark == top for v in ready_versions(study, "face")),
        30,
        "a ready FACE version covering all 200 answers",
    )
    time.sleep(3)  # let any straggling refit finish: it must not add a duplicate
    for method in ("explore", "face"):
        found = ready_versions(study, method)
        assert 1 <= len(found) <= 6, [v.judgment_watermark for v in found]
        marks = [v.judgment_watermark for v in found]
        assert len(set(marks)) == len(marks)  # no duplicate for the same data
        assert max(marks) == top
        assert found[-1].counts["judgments"] == 200


def test_a_worker_killed_mid_fit_leaves_exactly_one_ready_version_after_restart(refit_rig):
    """No beat anywhere: the new worker's start-up sweep re-queues the study (its periodic
    sweep is an hour away here, so only the start-up one can), and a version covering the last
    answer appears within a minute (issue 18, item 9)."""
    start, media, _ = refit_rig
    # Big enough that a fit takes a while, so the kill lands inside it.
    study, items, _ = study_with_space(media, n_items=3000, d=120, fit_face=False)
    a, b, y = simulate(
        np.load(media / "spaces/space-3000-120.npy"),
        60_000,
        seed=5,
        sigma0=np.diag(np.r_[np.full(10, 0.4), np.zeros(110)]),
    )
    judgments_create(study, items, a, b, y)
    top = top_judgment(study)
    worker = start()
    with transaction.atomic():
        refit_request(study_id=study.pk)
    fitting = wait_for(
        lambda: MetricVersion.objects.filter(study=study, status="fitting").first(),
        90,
        "the fit to start",
        interval=0.01,
    )
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    fitting.refresh_from_db()
    assert fitting.status == "fitting", "the fit ended before the kill; make the data larger"
    assert ready_versions(study) == []

    start(LEARNING_SWEEP_SECONDS="3600")  # no beat: the start-up sweep finds the study
    wait_for(lambda: ready_versions(study), 60, "a ready version within a minute of the restart")
    time.sleep(2)
    ready = ready_versions(study)
    assert [v.judgment_watermark for v in ready] == [top]
    fitting.refresh_from_db()
    assert fitting.status == "failed"
    assert fitting.transient
    sigma = sigma_of(ready[0])
    assert sigma.shape == (120, 120)
    assert np.isfinite(sigma).all()


def test_a_running_worker_sweeps_periodically_without_beat(refit_rig):
    """Data that reached the database without a refit message (e.g. the message was lost) is
    refitted by a running worker's own periodic sweep; no beat process runs."""
    start, media, _ = refit_rig
    study, items, _ = study_with_space(media, fit_face=False)
    start(LEARNING_SWEEP_SECONDS="2")
    time.sleep(3)  # past the start-up sweep: only a periodic one can find what comes next
    a, b, y = simulate(np.load(media / "spaces/space-80-6.npy"), 60, seed=4)
    judgments_create(study, items, a, b, y)  # no hook, no message
    top = top_judgment(study)
    wait_for(
        lambda: any(v.judgment_watermark == top for v in ready_versions(study)),
        60,
        "a periodic sweep to refit the study",
    )


def test_answers_are_saved_while_redis_is_down_and_the_sweep_catches_up(refit_rig):
    start, media, redis_server = refit_rig
    study, items, users = study_with_space(media, debounce=1)
    start()  # the worker's own periodic sweep (no beat)
    redis_server.stop()
    a, b, y = simulate(np.load(media / "spaces/space-80-6.npy"), 40, seed=3)
    started = time.monotonic()
    statuses = post_answers(study, items, users, a, b, y)
    elapsed = time.monotonic() - started
    assert statuses == [201] * 40  # saved and acknowledged
    assert PairJudgment.objects.filter(study=study).count() == 40
    assert elapsed < 20, f"40 answers took {elapsed:.1f} s with the broker down"
    assert ready_versions(study) == []

    redis_server.start()
    top = top_judgment(study)
    wait_for(
        lambda: any(v.judgment_watermark == top for v in ready_versions(study)),
        120,
        "the sweep to produce a version after Redis is back",
    )


def test_a_one_class_fit_fails_readably_in_the_worker_and_the_published_version_stays(
    refit_rig,
):
    start, media, _ = refit_rig
    study, items, users = study_with_space(media, debounce=1, fit_face=False)
    start()
    a, b, y = simulate(np.load(media / "spaces/space-80-6.npy"), 200, seed=2)
    judgments_create(study, items, a[y == 1], b[y == 1], y[y == 1], annotator=users[0])
    judgments_create(study, items, a[y == 0], b[y == 0], y[y == 0], annotator=users[1])
    with transaction.atomic():
        refit_request(study_id=study.pk)
    first = wait_for(lambda: ready_versions(study), 60, "the first version")[0]
    from django.contrib.auth import get_user_model

    root = get_user_model().objects.create_superuser("root", password="x-pass-123")
    metric_version_publish(
        version=first, user=root, reason="a test: published whatever its verdict"
    )

    with transaction.atomic():
        study.learning_settings.excluded_annotators.add(users[1])  # only "comparable" left
        refit_request(study_id=study.pk)
    failed = wait_for(
        lambda: MetricVersion.objects.filter(study=study, status="failed").first(),
        60,
        "the failed version",
    )
    assert "still missing: 1 incomparable" in failed.error
    first.refresh_from_db()
    assert first.is_published
    assert MetricVersion.objects.filter(study=study, is_published=True).count() == 1


def test_the_refit_benchmark_runs_in_its_quick_form_over_the_embedded_broker():
    """benchmarks/refit.py --quick: a real worker over the filesystem broker, no timing claims."""
    from ..conftest import ROOT, subprocess_env

    result = subprocess.run(
        [sys.executable, "benchmarks/refit.py", "--quick"],
        cwd=ROOT,
        env=subprocess_env(
            DATABASE_URL=None, REDIS_URL=None, CELERY_BROKER_URL=None, CELERY_RESULT_BACKEND=None
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("400"))
    total, debounce = (float(v) for v in line.split()[2:4])
    assert 0 < total < 120
    assert debounce == 3
    tail, tail_work = (float(v) for v in line.split()[-2:])
    # The burst's last 9 answers (< 10 new, the churn rule's minutes not passed) wait for the
    # study to go quiet (3 s) and the fit, not for minutes.
    assert debounce <= tail < 60
    assert tail < debounce + tail_work + 30  # loose: the machine is shared


def test_a_burst_of_commits_sends_one_message_until_the_refit_starts(refit_rig):
    import redis

    _, media, redis_server = refit_rig
    study, _, _ = study_with_space(media, debounce=30)
    for _ in range(50):
        with transaction.atomic():
            refit_request(study_id=study.pk)
    client = redis.Redis.from_url(redis_server.url)
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    assert client.llen(queue) == 1  # no worker: the one message waits in the queue

    refit_clear_due(study_id=study.pk)  # what the task does first when it runs
    with transaction.atomic():
        refit_request(study_id=study.pk)
    assert client.llen(queue) == 2


def test_the_last_answers_of_a_burst_reach_a_version_once_the_study_is_quiet(refit_rig):
    """Issue 25: 9 answers after a version (fewer than the 10 the churn rule asks, its 5 minutes
    far off) are in a version one quiet window plus the fit after the last of them."""
    start, media, _ = refit_rig
    study, items, users = study_with_space(
        media, debounce=1, version_min_new_answers=10, version_min_minutes=5
    )
    start()
    a, b, y = simulate(np.load(media / "spaces/space-80-6.npy"), 209, seed=5)
    judgments_create(study, items, a[:200], b[:200], y[:200], annotator=users[0])
    with transaction.atomic():
        refit_request(study_id=study.pk)
    first = top_judgment(study)
    wait_for(lambda: any(v.judgment_watermark == first for v in ready_versions(study)), 240, "v1")
    statuses = []
    for number in range(200, 209):  # a person pressing keys, 0.3 s apart
        statuses += post_answers(
            study,
            items,
            users,
            a[number : number + 1],
            b[number : number + 1],
            y[number : number + 1],
        )
        time.sleep(0.3)
    assert statuses == [201] * 9
    last = time.monotonic()
    top = top_judgment(study)
    wait_for(
        lambda: any(v.judgment_watermark == top for v in ready_versions(study)),
        120,
        "a version covering the burst's last answer",
    )
    assert time.monotonic() - last < 90  # the window (1 s) + the fit, on a shared machine
