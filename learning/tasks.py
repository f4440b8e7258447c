"""Celery tasks of learning: thin wrappers that take ids and call one service. The worker's entry
points into the rooms: a finished refit queues the dashboard refresh here, so the refit itself
(``learning.refits``) knows nothing of the dashboards above it; ``learning.audit_model`` runs a
model audit (``learning.audits.run``; idempotent, so acknowledged late too), sent to the audits'
own queue (``common.queues.audit_queue``) so that no refit waits behind one; the sweep sends
again the audits a broker or a worker lost.

``learning.refit_study`` is idempotent (a refit whose input already has a live version does
nothing), so it is acknowledged late and redelivered when a worker dies. Transient errors
(database or Redis unreachable) retry with exponential backoff; a study whose refit lease is
held by another refit is retried when the lease would expire.
"""

from __future__ import annotations

import logging
from dataclasses import asdict

from celery import shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from annotation.models import Study
from learning.audits import run as audit_runs
from learning.audits import services as audit_services
from learning.cohorts import service as cohorts
from learning.dashboards import refresh
from learning.evaluation import weat_tests
from learning.refits import service

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS = (
    OperationalError,
    InterfaceError,
    RedisConnectionError,
    RedisTimeoutError,
    BrokerError,
)
BUSY_RETRIES = 200
COHORT_DELAY = 5.0  # seconds after a refit: a burst's later refits fit the cohorts once  # a held lease always expires, so this only bounds a pathological loop


@shared_task(
    name="learning.refit_study",
    bind=True,
    acks_late=True,
    ignore_result=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=8,
    soft_time_limit=540,
    time_limit=600,
)
def refit_study(self, study_id: int) -> dict:
    try:
        report = service.refit_study(study_id=study_id)
    except Study.DoesNotExist:
        return {"study_id": study_id, "outcome": "study deleted"}
    if report.outcome == "busy":
        raise self.retry(countdown=report.retry_in, max_retries=BUSY_RETRIES)
    if report.outcome != "waiting":  # a waiting refit comes back when the burst is over
        refresh.dashboard_refresh_request(study_id=study_id)  # the figures, in the worker
    if report.ready and cohorts.cohorts_wanted(study_id):  # (one indexed query)
        cohort_fit.apply_async(args=[study_id], countdown=COHORT_DELAY)
    logger.info("refit of study %s: %s", study_id, report)
    return asdict(report)


@shared_task(
    name="learning.sweep",
    acks_late=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    max_retries=3,
    soft_time_limit=60,
    time_limit=90,
)
def sweep_stale_studies() -> list[int]:
    """Queue refits of studies whose data is newer than their latest versions, and send again
    the audits whose message or worker was lost (``audit_services.audits_resend``)."""
    audit_services.audits_resend()
    return service.refit_sweep()


@shared_task(
    name="learning.dashboard_refresh",
    acks_late=True,
    ignore_result=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
    soft_time_limit=240,
    time_limit=300,
)
def dashboard_refresh(study_id: int) -> float | None:
    """Compute the study dashboard's figures into the shared cache (idempotent: nothing to do
    when figures for the current data watermark are stored); the seconds it took."""
    try:
        seconds = refresh.dashboard_refresh(study_id=study_id)
    except Study.DoesNotExist:
        return None
    logger.info("dashboard of study %s refreshed in %s s", study_id, seconds)
    return seconds


@shared_task(
    name="learning.audit_model",
    acks_late=True,
    ignore_result=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=120,
    max_retries=8,
    soft_time_limit=3300,
    time_limit=3600,
)
def audit_model(audit_id: int) -> str:
    """Run a model audit (skipped when done, failed, gone or running under a live lease)."""
    outcome = audit_runs.audit_run(audit_id=audit_id)
    logger.info("audit %s: %s", audit_id, outcome)
    return outcome


@shared_task(
    name="learning.weat_test",
    acks_late=True,
    ignore_result=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=120,
    max_retries=5,
    soft_time_limit=540,
    time_limit=600,
)
def weat_test(test_id: int) -> int:
    """A WEAT test defined or changed on the study's page: its Euclidean baseline and its
    results under every ready version (idempotent: each result replaces the earlier one)."""
    stored = weat_tests.weat_test_evaluate(test_id)
    logger.info("WEAT test %s: %s results stored", test_id, stored)
    return stored


@shared_task(
    name="learning.cohort_fit",
    bind=True,
    acks_late=True,
    ignore_result=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=120,
    max_retries=8,
    soft_time_limit=1700,
    time_limit=1800,
)
def cohort_fit(self, study_id: int) -> dict:
    """The cohorts' metrics and their comparison after a pooled refit (``learning/cohorts/``;
    idempotent: nothing to do when the report for the newest pooled version exists)."""
    try:
        outcome = cohorts.cohort_refit(study_id=study_id)
    except Study.DoesNotExist:
        return {"study_id": study_id, "outcome": "study deleted"}
    if outcome.outcome == "busy":
        raise self.retry(countdown=outcome.retry_in, max_retries=BUSY_RETRIES)
    logger.info("cohorts of study %s: %s", study_id, outcome)
    return asdict(outcome)
