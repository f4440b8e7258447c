"""Queueing and coordinating refits: the debounce marker and the one-refit-per-study lease.

Annotation services call :func:`refit_request` inside their transaction. After the commit it
sets the study's "refit due" marker with a conditional UPDATE; only the request that sets it
sends the task, with a countdown of the study's debounce window, so a burst of answers becomes
one message and one fit at the end of the window. A refit that finds a burst still going on
(an answer newer than the window) and too few new answers for the churn rule re-queues itself
for the moment the study goes quiet (:func:`study_quiet_in`; adjudications are a burst too): the churn rule limits versions
during a burst only, and what has arrived when the study is quiet always gets a version, at
most one window plus the fit time after the last answer. The task clears the marker when it starts
(before it snapshots the data), so an answer committed while the marker is set is always
covered by the queued refit. A marker older than the window plus ``LEARNING_LOST_AFTER_SECONDS``
is treated as a lost message and re-sent (the periodic sweep does
the same). While a refit is queued, an answer costs one indexed read here and no write.

One refit runs per study at a time: :func:`lease_claim` is a conditional UPDATE on the study's
:class:`~learning.models.RefitState` row (works with any broker, also the embedded one), renewed
by the running refit and left to expire when a worker dies. The database is the only shared
state, so the design holds with several web processes and workers.

Tasks are sent by name through Celery's current app (:func:`task_send`): this module imports
neither the task module nor the project's Celery module.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Adjudication, PairJudgment
from learning.models import RefitState, StudyLearningSettings

logger = logging.getLogger(__name__)

REFIT_TASK = "learning.refit_study"
SWEEP_TASK = "learning.sweep"
BROKER_DOWN_BACKOFF = 3  # seconds between send attempts while the broker is unreachable
# A down broker must not hold an annotator's request: one quick retry, then give up.
PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}


def refit_request(*, study_id: int) -> None:
    """Queue a refit of ``study_id`` after the current transaction commits (debounced).

    Neither a down broker nor a database hiccup after the commit may fail the annotator's
    request: the answer is already committed and the periodic sweep picks the study up later.
    """

    def after_commit() -> None:
        try:
            refit_mark_due(study_id=study_id)
        except Exception:
            logger.warning(
                "could not queue a refit of study %s; the sweep will", study_id, exc_info=True
            )

    transaction.on_commit(after_commit)


def study_debounce_seconds(study_id: int) -> int:
    value = (
        StudyLearningSettings.objects.filter(study_id=study_id)
        .values_list("debounce_seconds", flat=True)
        .first()
    )
    return settings.LEARNING_DEBOUNCE_SECONDS if value is None else int(value)


def study_quiet_in(*, study_id: int, debounce: float, now: datetime) -> float:
    """Seconds until the study has had no new answer and no new adjudication for ``debounce``
    seconds (0 when it has: the study is quiet) — a reviewer deciding disagreements one after
    the other is a burst like annotators answering. Two indexed reads: the newest answer's and
    the newest decision's time."""
    times = [
        model.objects.filter(study_id=study_id)
        .order_by("-id")
        .values_list("created_at", flat=True)
        .first()
        for model in (PairJudgment, Adjudication)
    ]
    times = [t for t in times if t is not None]
    if not times:
        return 0.0
    return max(0.0, debounce - (now - max(times)).total_seconds())


def refit_mark_due(*, study_id: int, debounce: float | None = None) -> bool:
    """Set the study's "refit due" marker and send the task if no refit is queued yet.

    Returns True when this call sent (or tried to send) a message, False when it coalesced
    into a refit that is already queued.
    """
    now = timezone.now()
    lost_before = now - timedelta(seconds=settings.LEARNING_LOST_AFTER_SECONDS)
    # The common case under load: a refit is already queued. One read decides, and an answer
    # seen here as riding along committed before the task clears the marker (so it is in the
    # task's snapshot), just as with the conditional UPDATE below.
    marker = list(RefitState.objects.filter(study_id=study_id).values_list("due_at", flat=True)[:1])
    if marker and marker[0] is not None and marker[0] >= lost_before:
        return False
    if debounce is None:
        debounce = study_debounce_seconds(study_id)
    due = now + timedelta(seconds=debounce)
    free = Q(due_at__isnull=True) | Q(due_at__lt=lost_before)
    claimed = RefitState.objects.filter(free, study_id=study_id).update(due_at=due)
    if not claimed:
        _, created = RefitState.objects.get_or_create(study_id=study_id, defaults={"due_at": due})
        if not created:
            return False
    if not refit_send(study_id=study_id, countdown=debounce):
        # Broker down: keep the marker a few seconds, so the answers that follow do not each
        # wait for a dead broker, then let the next answer (or the sweep) try again.
        retry_at = lost_before + timedelta(seconds=BROKER_DOWN_BACKOFF)
        RefitState.objects.filter(study_id=study_id, due_at=due).update(due_at=retry_at)
    return True


def refit_send(*, study_id: int, countdown: float = 0) -> bool:
    """Send the refit message now; False (and a warning) when the broker refuses."""
    return task_send(REFIT_TASK, study_id=study_id, countdown=countdown)


def task_send(name: str, *, study_id: int, countdown: float = 0) -> bool:
    """Send task ``name`` for a study; False (and a warning) when the broker refuses."""
    try:
        current_app.send_task(
            name,
            kwargs={"study_id": study_id},
            countdown=countdown,
            queue=settings.CELERY_TASK_DEFAULT_QUEUE,
            # Nobody waits for the result (the versions are in the database); and not
            # subscribing to it keeps a down Redis from holding the request for seconds.
            ignore_result=True,
            retry=True,
            retry_policy=PUBLISH_RETRY_POLICY,
        )
    except Exception:
        logger.warning("could not send %s for study %s", name, study_id, exc_info=True)
        return False
    return True


def refit_clear_due(*, study_id: int) -> None:
    """Called by the task when it starts: answers committed from now on queue a new refit."""
    RefitState.objects.filter(study_id=study_id).update(due_at=None)


def lease_claim(*, study_id: int) -> str | None:
    """Claim the study's refit lease; the token, or None when another refit holds it."""
    RefitState.objects.get_or_create(study_id=study_id)
    now = timezone.now()
    token = uuid.uuid4().hex
    claimed = (
        RefitState.objects.filter(study_id=study_id)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(
            lease_token=token,
            lease_until=now + timedelta(seconds=settings.LEARNING_LEASE_SECONDS),
            last_started_at=now,
        )
    )
    return token if claimed else None


def lease_renew(*, study_id: int, token: str) -> bool:
    """Extend a held lease; False when it was lost (expired and claimed by another refit)."""
    until = timezone.now() + timedelta(seconds=settings.LEARNING_LEASE_SECONDS)
    return bool(
        RefitState.objects.filter(study_id=study_id, lease_token=token).update(lease_until=until)
    )


def lease_release(*, study_id: int, token: str, outcome: str) -> None:
    RefitState.objects.filter(study_id=study_id, lease_token=token).update(
        lease_token="",
        lease_until=None,
        last_finished_at=timezone.now(),
        last_outcome=outcome[:500],
    )


def lease_return(*, study_id: int, token: str) -> None:
    """Free the lease without a refit's outcome (the cohorts' fits: ``learning/cohorts/``)."""
    RefitState.objects.filter(study_id=study_id, lease_token=token).update(
        lease_token="", lease_until=None
    )


def lease_remaining(*, study_id: int) -> float:
    """Seconds until the current lease expires (0 when free)."""
    until: datetime | None = (
        RefitState.objects.filter(study_id=study_id).values_list("lease_until", flat=True).first()
    )
    if until is None:
        return 0.0
    return max(0.0, (until - timezone.now()).total_seconds())


class LeaseKeeper:
    """Renews the study's lease in a background thread while a refit runs."""

    def __init__(self, study_id: int, token: str) -> None:
        self.study_id, self.token = study_id, token
        self.lost = False
        self._stop = threading.Event()
        # Only a committed claim can be renewed from another connection.
        self._thread = (
            None
            if connection.in_atomic_block
            else threading.Thread(target=self._run, name=f"refit-lease-{study_id}", daemon=True)
        )

    def _run(self) -> None:
        interval = max(0.5, settings.LEARNING_LEASE_SECONDS / 3)
        try:
            while not self._stop.wait(interval):
                if not lease_renew(study_id=self.study_id, token=self.token):
                    self.lost = True
                    logger.warning("refit lease of study %s was lost", self.study_id)
                    return
        except DatabaseError:
            logger.warning("could not renew the refit lease of study %s", self.study_id)
        finally:
            connections.close_all()  # this thread's own connections

    def __enter__(self) -> LeaseKeeper:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
