"""Celery queue names: the default queue, and the dashboards' own queue beside it.

The study dashboard's figures take seconds on a big study; on the default queue a refit sent
meanwhile would wait behind them on a worker that runs one task at a time. They go to a queue of
their own (``learning.dashboard_refresh``), consumed by a worker of its own (``make run``,
``make load``), so that a refit starts at once. Its name is ``CELERY_DASHBOARD_QUEUE`` when set,
else the default queue's name with ``-dashboards`` after it — read at call time, so that a test
that gives a worker a private default queue gets a private dashboards queue with it.
"""

from __future__ import annotations

from django.conf import settings

DASHBOARD_SUFFIX = "-dashboards"


def dashboard_queue_of(queue: str) -> str:
    """The dashboards' queue that goes with the default queue ``queue``."""
    return f"{queue}{DASHBOARD_SUFFIX}"


def dashboard_queue() -> str:
    """The queue the dashboard figures are sent to (``CELERY_DASHBOARD_QUEUE``, else derived)."""
    return settings.CELERY_DASHBOARD_QUEUE or dashboard_queue_of(settings.CELERY_TASK_DEFAULT_QUEUE)


def every_queue(queue: str) -> str:
    """``-Q`` for one worker that consumes everything: ``queue`` and its dashboards' queue."""
    return f"{queue},{dashboard_queue_of(queue)}"
