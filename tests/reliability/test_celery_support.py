"""``tests/celery_support.py: app_pointed_at`` leaves nothing of its block behind (issue #39,
item 8): the broker pools and the result backend the app caches.

The likely cause of rare CI failures ("Retry limit exceeded while trying to reconnect to the
Celery result store"): a block pointed the app at a throwaway Redis, the test stopped it, and
the app kept the result backend it had made inside the block (Celery caches it per thread:
``app._local.backend``); the next ``send_task`` subscribed to its result there, at a server
that was gone, and retried until it gave up."""

from __future__ import annotations

import time

import pytest

from fairmetric_site.celery import app
from tests.celery_support import app_pointed_at

pytestmark = pytest.mark.django_db


def test_a_block_pointed_at_a_stopped_redis_leaves_no_result_backend_behind(
    private_redis, redis_url
):
    with app_pointed_at(private_redis.url):
        app.send_task("fairmetric.ping", queue="nobody-listens-here")  # makes the backend
        assert str(private_redis.port) in app.backend.url
    private_redis.stop()
    with app_pointed_at(redis_url):
        began = time.perf_counter()
        app.send_task("fairmetric.ping", queue="nobody-listens-here")  # before: retried, raised
        assert time.perf_counter() - began < 5
        assert str(private_redis.port) not in app.backend.url
    assert str(private_redis.port) not in app.backend.url  # the settings' own, again
