"""audit.limits: the window counter and the token bucket, step by step (no clock: ``now`` is
given), on the configured database."""

from __future__ import annotations

import uuid

import pytest

from audit import limits

pytestmark = pytest.mark.django_db


def test_window_counts_attempts_and_restarts_after_the_window():
    assert limits.window_take("k", window=10, now=100.0) == (1, 110.0)
    assert limits.window_take("k", window=10, now=105.0) == (2, 110.0)
    assert limits.window_read("k", now=109.0) == (2, 110.0)
    assert limits.window_read("k", now=110.0) == (0, 0.0)
    assert limits.window_take("k", window=10, now=111.0) == (1, 121.0)


def test_bucket_grants_the_burst_then_the_rate():
    granted = [limits.bucket_take("b", rate=2, burst=3, now=100.0)[0] for _ in range(5)]
    assert granted == [True, True, True, False, False]
    ok, wait = limits.bucket_take("b", rate=2, burst=3, now=100.0)
    assert not ok
    assert wait == pytest.approx(0.5)
    assert limits.bucket_take("b", rate=2, burst=3, now=100.5)[0]
    assert not limits.bucket_take("b", rate=2, burst=3, now=100.5)[0]
    # A long pause refills the bucket to the burst, not beyond.
    later = [limits.bucket_take("b", rate=2, burst=3, now=200.0)[0] for _ in range(4)]
    assert later == [True, True, True, False]


def test_expired_rows_are_deleted():
    limits.window_take("old", window=1, now=0.0)
    limits.window_take("new", window=1000, now=0.0)
    assert limits.expired_delete(now=10.0) == 1
    assert limits.window_read("new", now=10.0)[0] == 1


def test_the_redis_bucket_grants_like_the_database_and_counts_answers(settings, redis_url):
    """The answer bucket in Redis (one Lua script) follows the same steps as the database's,
    and a batch takes one token per answer, as many as are left."""
    settings.CACHES = {
        "default": {
            "BACKEND": "common.redis_cache.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"lim-{uuid.uuid4().hex[:8]}",
        }
    }
    granted = [limits.bucket_take("r", rate=2, burst=3, now=100.0)[0] for _ in range(5)]
    assert granted == [1, 1, 1, 0, 0]
    assert limits.bucket_take("r", rate=2, burst=3, now=100.0) == (0, pytest.approx(0.5))
    assert limits.bucket_take("r", rate=2, burst=3, cost=5, now=200.0) == (3, pytest.approx(0.5))
    assert limits.bucket_take("r", rate=2, burst=3, cost=2, now=201.0) == (2, 0.0)
    from audit.models import RateLimit

    assert not RateLimit.objects.exists()  # no database row on the Redis path


def test_the_database_bucket_counts_answers_too():
    assert limits.bucket_take("d", rate=2, burst=3, cost=5, now=100.0) == (3, pytest.approx(0.5))
    assert limits.bucket_take("d", rate=2, burst=3, cost=2, now=101.0) == (2, 0.0)
    assert limits.bucket_take("d", rate=2, burst=3, cost=2, now=101.0)[0] == 0


def test_bucket_in_redis_reads_redis_clock_when_no_time_is_given(settings, redis_url):
    """Without ``now`` the Lua script takes Redis's clock, so the order of the takes is the
    order of their times (callers' clocks, read before their turn, need not be)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
        }
    }
    # A slow rate: the bucket cannot refill while the test runs.
    granted = [limits.bucket_take("r", rate=0.01, burst=3)[0] for _ in range(4)]
    assert granted == [1, 1, 1, 0]
    assert not limits.RateLimit.objects.filter(key="r").exists()  # Redis, not the database
    got, wait = limits.bucket_take("r", rate=0.01, burst=3)
    assert got == 0
    assert 99.0 < wait <= 100.0  # the next token, 1/rate after the first was taken
