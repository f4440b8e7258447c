"""audit.limits: the window counter and the token bucket, step by step (no clock: ``now`` is
given), on the configured database."""

from __future__ import annotations

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
