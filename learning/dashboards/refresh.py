"""The study dashboard's figures, computed in the worker and kept in the shared cache.

The figures (κ per annotator pair, α, gold accuracy, per-annotator counts) take seconds at a
million answers, so a page never computes them for a big study. They are stored in the
Django cache (Redis, or the file cache shared by processes) under the study and its data
watermark (highest judgment id, judgment count, gold pairs, group revision), with the time
they were computed; a second key points at the study's latest figures.

* :func:`dashboard_state` (the page and its JSON status) costs the three watermark queries and
  two cache reads: figures for the current watermark are *fresh*; older ones are served as
  *stale* (and a refresh is queued); with none the page shows a "computing…" shell that polls.
  A study with fewer than ``DASHBOARD_INLINE_MAX_JUDGMENTS`` answers (default 5,000: well
  under a second of computation) is still computed inline on a miss.
* :func:`dashboard_refresh` (the ``learning.dashboard_refresh`` task) computes and stores them;
  it does nothing when figures for the current watermark are already stored (idempotent).
* :func:`dashboard_refresh_request` sends that task at most once per
  ``DASHBOARD_REFRESH_SECONDS`` per study (a ``cache.add`` marker). Refits request it when they
  finish, and so do pages that find stale or missing figures. It goes to the dashboards' own
  queue (``common/queues.py``), never the refits': a worker computing figures holds no refit up.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

from celery import current_app
from django.conf import settings
from django.core.cache import cache

from annotation.models import Study
from common.queues import dashboard_queue
from learning.dashboards import figures
from learning.refits import scheduling

logger = logging.getLogger(__name__)

REFRESH_TASK = "learning.dashboard_refresh"
CACHE_SECONDS = 7 * 24 * 3600  # figures outlive quiet periods; a newer watermark replaces them


@dataclass
class DashboardState:
    board: figures.StudyDashboard | None  # None: nothing computed yet ("computing…")
    answers: int  # judgments in the study now
    fresh: bool  # the figures are for the current watermark
    queued: bool = False  # a refresh was requested by this call


def _latest_key(study_id: int) -> str:
    return f"learning:dashboard:{study_id}:latest"


def _marks_key(study_id: int, marks: tuple) -> str:
    digest = hashlib.sha1(repr(marks).encode()).hexdigest()[:16]
    return f"learning:dashboard:{study_id}:{digest}"


def _queued_key(study_id: int) -> str:
    return f"learning:dashboard:{study_id}:queued"


def cached_figures(study_id: int, marks: tuple) -> figures.StudyDashboard | None:
    """The figures stored for exactly this watermark, if any."""
    return cache.get(_marks_key(study_id, marks))


def _store(study_id: int, marks: tuple, board: figures.StudyDashboard) -> None:
    board.stale = False
    cache.set_many(
        {_marks_key(study_id, marks): board, _latest_key(study_id): (marks, board)}, CACHE_SECONDS
    )


def dashboard_state(study: Study, *, request_refresh: bool = True) -> DashboardState:
    """What the dashboard page shows now; never computes a big study's figures."""
    marks = figures.data_watermark(study)
    answers = marks[1] or 0
    board = cached_figures(study.pk, marks)
    if board is not None:
        board.stale = False
        return DashboardState(board=board, answers=answers, fresh=True)
    latest = cache.get(_latest_key(study.pk))
    if latest is None and answers < settings.DASHBOARD_INLINE_MAX_JUDGMENTS:
        board = figures.study_dashboard(study)
        _store(study.pk, marks, board)
        return DashboardState(board=board, answers=answers, fresh=True)
    queued = request_refresh and dashboard_refresh_request(study_id=study.pk)
    if latest is None:
        return DashboardState(board=None, answers=answers, fresh=False, queued=queued)
    board = latest[1]
    board.stale = True
    return DashboardState(board=board, answers=answers, fresh=False, queued=queued)


def dashboard_refresh(*, study_id: int) -> float | None:
    """Compute and store the study's figures for its current watermark; the seconds it took,
    or None when they were already stored. Raises ``Study.DoesNotExist``."""
    study = Study.objects.select_related("space").get(pk=study_id)
    marks = figures.data_watermark(study)  # taken first: answers arriving meanwhile stay newer
    if cached_figures(study_id, marks) is not None:
        return None
    started = time.perf_counter()
    board = figures.study_dashboard(study)
    _store(study_id, marks, board)
    return time.perf_counter() - started


def dashboard_refresh_request(*, study_id: int) -> bool:
    """Send the refresh task unless one was sent for this study in the last
    ``DASHBOARD_REFRESH_SECONDS``; True when sent. A down broker only logs a warning."""
    try:
        if not cache.add(_queued_key(study_id), time.time(), settings.DASHBOARD_REFRESH_SECONDS):
            return False
    except Exception:  # noqa: BLE001 - a down cache must not fail a refit or a page
        logger.warning("cache unreachable; no dashboard refresh of study %s", study_id)
        return False
    try:
        current_app.send_task(
            REFRESH_TASK,
            kwargs={"study_id": study_id},
            queue=dashboard_queue(),
            ignore_result=True,
            retry=True,
            retry_policy=scheduling.PUBLISH_RETRY_POLICY,
        )
    except Exception:  # a down broker must not fail a refit or a page
        logger.warning("could not send %s for study %s", REFRESH_TASK, study_id, exc_info=True)
        cache.delete(_queued_key(study_id))  # the next page or refit retries
        return False
    return True
