"""Rate-limit counters that hold under concurrency: one atomic statement per check.

Both limits of the app were once read-then-write in the cache, so concurrent requests read the
same state and all passed (30 simultaneous wrong passwords: 28 checked against a limit of 5;
150 simultaneous judgment POSTs: all accepted against a bucket of 60). Here each check is a
single ``INSERT … ON CONFLICT (key) DO UPDATE … RETURNING`` on ``audit.RateLimit``: the
database serializes writers of one row (PostgreSQL's row lock, SQLite's write lock), so the
decision of every request sees the writes of all requests before it. It needs no cache (a Redis
restart neither loses nor opens a limit) and works on both databases.

* :func:`window_take` — a fixed window counter: the n-th attempt within ``window`` seconds of
  the first gets ``n``; the caller refuses when ``n`` exceeds its limit.
* :func:`bucket_take` — a token bucket of ``burst`` refilled at ``rate`` per second, written as
  GCRA (one timestamp, the "theoretical arrival time"): a request is granted when the bucket
  would still hold a token, and never more than ``burst + rate · t`` requests in any ``t``
  seconds, whatever the concurrency.

Expired rows are deleted now and then by the writers (:func:`expired_delete`).
"""

from __future__ import annotations

import random
import time

from django.db import connection

from .models import RateLimit

TABLE = RateLimit._meta.db_table
CLEANUP_CHANCE = 1 / 512


def window_take(key: str, *, window: float, now: float | None = None) -> tuple[int, float]:
    """Count one attempt on ``key``; (attempts in the current window, its end, epoch s)."""
    now = time.time() if now is None else now
    sql = (
        f"INSERT INTO {TABLE} (key, count, stamp, expires) VALUES (%s, 1, %s, %s) "
        f"ON CONFLICT (key) DO UPDATE SET "
        f"count = CASE WHEN {TABLE}.expires <= %s THEN 1 ELSE {TABLE}.count + 1 END, "
        f"stamp = CASE WHEN {TABLE}.expires <= %s THEN %s ELSE {TABLE}.stamp END, "
        f"expires = CASE WHEN {TABLE}.expires <= %s THEN %s ELSE {TABLE}.expires END "
        f"RETURNING count, expires"
    )
    end = now + window
    with connection.cursor() as cursor:
        cursor.execute(sql, [key, now, end, now, now, now, now, end])
        count, expires = cursor.fetchone()
    if random.random() < CLEANUP_CHANCE:
        expired_delete(now)
    return int(count), float(expires)


def window_read(key: str, *, now: float | None = None) -> tuple[int, float]:
    """(attempts, window end) of ``key`` without counting one; (0, 0) when none or expired."""
    now = time.time() if now is None else now
    row = RateLimit.objects.filter(key=key, expires__gt=now).values_list("count", "expires")
    found = row.first()
    return (int(found[0]), float(found[1])) if found else (0, 0.0)


def forget(key: str) -> None:
    RateLimit.objects.filter(key=key).delete()


def bucket_take(
    key: str, *, rate: float, burst: float, now: float | None = None
) -> tuple[bool, float]:
    """Take one token from ``key``'s bucket; (granted, seconds until one is available)."""
    now = time.time() if now is None else now
    interval = 1.0 / rate
    span = burst * interval  # a full bucket: the TAT may run this far ahead of now
    tat = f"(CASE WHEN {TABLE}.stamp > %s THEN {TABLE}.stamp ELSE %s END)"
    fits = f"({tat} + %s <= %s)"
    sql = (
        f"INSERT INTO {TABLE} (key, count, stamp, expires) VALUES (%s, 1, %s, %s) "
        f"ON CONFLICT (key) DO UPDATE SET "
        f"count = CASE WHEN {fits} THEN 1 ELSE 0 END, "
        f"stamp = CASE WHEN {fits} THEN {tat} + %s ELSE {TABLE}.stamp END, "
        f"expires = %s "
        f"RETURNING count, stamp"
    )
    fits_params = [now, now, interval, now + span]
    params = [key, now + interval, now + span, *fits_params, *fits_params, now, now, interval]
    params.append(now + span)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        granted, stamp = cursor.fetchone()
    if granted:
        return True, 0.0
    return False, max(0.0, float(stamp) + interval - now - span)


def expired_delete(now: float | None = None) -> int:
    now = time.time() if now is None else now
    return RateLimit.objects.filter(expires__lt=now).delete()[0]
