"""Django's Redis cache, keeping its ``redis.Redis`` client objects.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache call; its
constructor fills a case-insensitive table of ~170 response callbacks, which measured ~0.75 ms
of CPU per call — about 5 ms of every answer, which makes a few cache calls (loadtest/profile.py).
The clients share the connection pools anyway and are thread-safe, so one per pool is kept.

And a Redis that does not answer (stopped, restarting, unreachable; each call bounded by
``REDIS_TIMEOUT_MS``) is an empty cache that keeps nothing: reads miss, writes and deletes do
nothing, ``incr`` finds no key (``ValueError``), ``add`` adds nothing. Everything cached is
also in the database, so every caller goes on (a query instead of a hit) instead of answering
500 — the same for callers that forget to guard their cache calls (the review page's counts
did; issue 26). Other Redis errors (a wrong type, a script error) still raise.
"""

from __future__ import annotations

import functools
import logging
import threading
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
WARN_EVERY = 10.0  # seconds between two warnings that the cache is unreachable (per process)
_warned = [0.0]


class _KeptClients(RedisCacheClient):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._kept: dict[int, object] = {}
        self._kept_lock = threading.Lock()

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._kept.get(id(pool))
        if client is None:
            with self._kept_lock:
                client = self._kept.setdefault(id(pool), self._client(connection_pool=pool))
        return client


def _unreachable(method: str, exc: Exception) -> None:
    now = time.monotonic()
    if now - _warned[0] >= WARN_EVERY:
        _warned[0] = now
        logger.warning("cache unreachable (%s: %s): going on without it", method, exc)


def _or_when_down(answer):
    """``method`` of the cache, answering ``answer(*args, **kwargs)`` when Redis is down."""

    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except UNREACHABLE as exc:
                _unreachable(method.__name__, exc)
                return answer(*args, **kwargs)

        return guarded

    return wrap


def _missing(key, *args, **kwargs):
    raise ValueError(f"Key {key!r} not found (the cache is unreachable)")


class RedisCache(DjangoRedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with one client object per pool, and an
    empty cache that keeps nothing whenever Redis does not answer."""

    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = _KeptClients

    @_or_when_down(lambda key, default=None, version=None: default)
    def get(self, key, default=None, version=None):
        return super().get(key, default, version)

    @_or_when_down(lambda *a, **k: {})
    def get_many(self, keys, version=None):
        return super().get_many(keys, version)

    @_or_when_down(lambda *a, **k: None)
    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return super().set(key, value, timeout, version)

    @_or_when_down(lambda *a, **k: False)
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return super().add(key, value, timeout, version)

    @_or_when_down(lambda keys, *a, **k: list(keys))
    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return super().set_many(data, timeout, version)

    @_or_when_down(lambda *a, **k: False)
    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return super().touch(key, timeout, version)

    @_or_when_down(lambda *a, **k: False)
    def delete(self, key, version=None):
        return super().delete(key, version)

    @_or_when_down(lambda *a, **k: None)
    def delete_many(self, keys, version=None):
        return super().delete_many(keys, version)

    @_or_when_down(lambda *a, **k: False)
    def has_key(self, key, version=None):
        return super().has_key(key, version)

    @_or_when_down(_missing)
    def incr(self, key, delta=1, version=None):
        return super().incr(key, delta, version)

    @_or_when_down(lambda *a, **k: False)
    def clear(self):
        return super().clear()
