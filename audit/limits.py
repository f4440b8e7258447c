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
  GCRA (one timestamp, the "theoretical arrival time"): a request takes up to ``cost`` tokens
  (a batch of answers counts each answer) while the bucket holds them, and never more than
  ``burst + rate · t`` tokens go in any ``t`` seconds, whatever the concurrency. On the answer
  path it runs as one Lua script in Redis when the cache is Redis (no database statement per
  answer), and falls back to the database statement when Redis does not answer.

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


_BUCKET_LUA = """
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local now = tonumber(ARGV[1])
if now == nil then  -- Redis's own clock: the order of the takes is the order of their times
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local interval, span, want = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if tat < now then tat = now end
local granted = math.floor((now + span - tat) / interval + 1e-9)
if granted > want then granted = want end
if granted < 0 then granted = 0 end
if granted > 0 then
  tat = tat + granted * interval
  redis.call('SET', KEYS[1], string.format('%.6f', tat), 'PX', math.ceil(span * 1000) + 1000)
end
return {granted, string.format('%.6f', tat), string.format('%.6f', now)}
"""


def _redis_client(key: str):
    """The raw client of Django's Redis cache (None for any other cache backend)."""
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        return None, None
    full_key = cache.make_and_validate_key(f"limits:{key}")
    return cache._cache.get_client(full_key, write=True), full_key


def bucket_take(
    key: str, *, rate: float, burst: float, cost: int = 1, now: float | None = None
) -> tuple[int, float]:
    """Take up to ``cost`` tokens from ``key``'s bucket: (tokens granted, seconds until the
    next one is available when fewer than ``cost`` were granted, else 0).

    In Redis when Django's cache is Redis (one Lua script: atomic, no database statement);
    in the database otherwise, and whenever Redis does not answer (a Redis restart then
    falls back to the database's own bucket rather than refusing answers or lifting the limit).
    """
    interval = 1.0 / rate
    span = burst * interval  # a full bucket: the TAT may run this far ahead of now
    granted = stamp = None
    try:
        client, full_key = _redis_client(key)
        if client is not None:
            # Without a given time the script reads Redis's clock: times taken by the callers
            # before their turn would not be in the order the takes run, and a take that ran
            # later with an earlier time would find the bucket emptier than it is.
            granted, stamp, clock = client.eval(
                _BUCKET_LUA, 1, full_key, "" if now is None else now, interval, span, cost
            )
            now = float(clock)
    except Exception:  # noqa: BLE001 - Redis down: the database's bucket decides
        granted = None
    if granted is None:
        now = time.time() if now is None else now
        granted, stamp = _bucket_take_db(key, now=now, interval=interval, span=span, cost=cost)
    granted = int(granted)
    if granted >= cost:
        return granted, 0.0
    return granted, max(0.0, float(stamp) + interval - now - span)


def _bucket_take_db(key: str, *, now: float, interval: float, span: float, cost: int):
    """One ``INSERT … ON CONFLICT … RETURNING``; ``count`` holds the tokens granted."""
    tat = f"(CASE WHEN {TABLE}.stamp > %s THEN {TABLE}.stamp ELSE %s END)"
    if connection.vendor == "postgresql":
        free = f"FLOOR((%s - {tat}) / %s + 1e-9)::integer"
    else:  # SQLite: CAST truncates, and the value is >= 0 where it is used
        free = f"CAST((%s - {tat}) / %s + 1e-9 AS INTEGER)"
    free_params = [now + span, now, now, interval]
    grant = f"(CASE WHEN {tat} + %s > %s THEN 0 WHEN {free} > %s THEN %s ELSE {free} END)"
    grant_params = [now, now, interval, now + span, *free_params, cost, cost, *free_params]
    first = min(cost, int(span / interval + 1e-9))
    sql = (
        f"INSERT INTO {TABLE} (key, count, stamp, expires) VALUES (%s, %s, %s, %s) "
        f"ON CONFLICT (key) DO UPDATE SET "
        f"count = {grant}, "
        f"stamp = {tat} + {grant} * %s, "
        f"expires = %s "
        f"RETURNING count, stamp"
    )
    params = [key, first, now + first * interval, now + span, *grant_params]
    params += [now, now, *grant_params, interval, now + span]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        granted, stamp = cursor.fetchone()
    return granted, stamp


def expired_delete(now: float | None = None) -> int:
    now = time.time() if now is None else now
    return RateLimit.objects.filter(expires__lt=now).delete()[0]
