"""The dashboard figures run on a queue of their own: a refit never waits behind them.

Real worker processes, a real Redis and the test database (the rig of test_refit_worker.py). The
refits' worker consumes the default queue only; the dashboards' queue gets its worker later. A
dashboard refresh waits on its queue the whole time the refit runs — as it would behind a worker
busy computing figures — and the refit still reaches a ready version; then the dashboards'
worker computes the figures into the shared cache.
"""

from __future__ import annotations

import numpy as np
import pytest
import redis

from common.queues import dashboard_queue, dashboard_queue_of, every_queue
from learning.dashboards import figures, refresh
from tests.celery_support import wait_for

from . import test_refit_worker as base
from .synthetic import simulate

refit_rig = base.refit_rig  # the fixture: a private Redis, workers for it, this process on it
post_answers, ready_versions, top_judgment = (
    base.post_answers,
    base.ready_versions,
    base.top_judgment,
)

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_queue_names_follow_the_default_queue_unless_set(settings):
    settings.CELERY_TASK_DEFAULT_QUEUE = "q1"
    settings.CELERY_DASHBOARD_QUEUE = ""
    assert dashboard_queue() == "q1-dashboards" == dashboard_queue_of("q1")
    assert every_queue("q1") == "q1,q1-dashboards,q1-audits"
    settings.CELERY_DASHBOARD_QUEUE = "figures"
    assert dashboard_queue() == "figures"


def test_a_refit_reaches_its_version_while_the_dashboard_figures_wait(refit_rig, settings):
    start, media, redis_server = refit_rig
    study, items, users = base.study_with_space(media, debounce=1)
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    figures_queue = dashboard_queue_of(queue)
    broker = redis.Redis.from_url(redis_server.url)

    assert refresh.dashboard_refresh_request(study_id=study.pk)
    assert broker.llen(figures_queue) == 1  # the figures' task, on its own queue
    assert broker.llen(queue) == 0

    start(consume=queue)  # the refits' worker only
    a, b, y = simulate(np.load(media / "spaces/space-80-6.npy"), 40, seed=5)
    assert post_answers(study, items, users, a, b, y) == [201] * 40
    top = top_judgment(study)
    wait_for(
        lambda: any(v.judgment_watermark == top for v in ready_versions(study)),
        90,
        "a ready EXPLORE version covering the answers, the figures not computed",
    )
    assert broker.llen(figures_queue) >= 1  # still waiting: the refit did not wait for them

    settings.CACHES = {  # read the cache the workers write (Redis, as they are configured)
        "default": {
            "BACKEND": "common.redis_cache.RedisCache",
            "LOCATION": redis_server.url,
            "KEY_PREFIX": "fm",
        }
    }
    start(consume=figures_queue)  # the dashboards' worker
    wait_for(lambda: broker.llen(figures_queue) == 0, 60, "the dashboards' worker to take them")
    wait_for(
        lambda: refresh.cached_figures(study.pk, figures.data_watermark(study)) is not None,
        60,
        "the figures of the current data, computed by the dashboards' worker",
    )
    board = refresh.cached_figures(study.pk, figures.data_watermark(study))
    assert board.total == 40
