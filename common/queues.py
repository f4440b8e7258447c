"""Celery queue names: the default queue, and two queues of their own beside it.

The study dashboard's figures take seconds on a big study, and a model audit may take an hour; on
the default queue a refit sent meanwhile would wait behind them on a worker that runs one task at
a time. Each goes to a queue of its own (``learning.dashboard_refresh``; ``learning.audit_model``),
consumed by a worker of its own (``make run``, ``make load``), so that a refit starts at once. The
names are ``CELERY_DASHBOARD_QUEUE`` and ``CELERY_AUDIT_QUEUE`` when set, else the default queue's
name with ``-dashboards`` or ``-audits`` after it — read at call time, so that a test that gives a
worker a private default queue gets private queues with it.
"""

from __future__ import annotations

from django.conf import settings

DASHBOARD_SUFFIX = "-dashboards"
AUDIT_SUFFIX = "-audits"


def dashboard_queue_of(queue: str) -> str:
    """The dashboards' queue that goes with the default queue ``queue``."""
    return f"{queue}{DASHBOARD_SUFFIX}"


def audit_queue_of(queue: str) -> str:
    """The audits' queue that goes with the default queue ``queue``."""
    return f"{queue}{AUDIT_SUFFIX}"


def dashboard_queue() -> str:
    """The queue the dashboard figures are sent to (``CELERY_DASHBOARD_QUEUE``, else derived)."""
    return settings.CELERY_DASHBOARD_QUEUE or dashboard_queue_of(settings.CELERY_TASK_DEFAULT_QUEUE)


def audit_queue() -> str:
    """The queue model audits are sent to (``CELERY_AUDIT_QUEUE``, else derived)."""
    return settings.CELERY_AUDIT_QUEUE or audit_queue_of(settings.CELERY_TASK_DEFAULT_QUEUE)


def every_queue(queue: str) -> str:
    """``-Q`` for one worker that consumes everything: ``queue``, its dashboards' and its audits'
    queues."""
    return f"{queue},{dashboard_queue_of(queue)},{audit_queue_of(queue)}"
