"""Django's Redis cache, keeping its ``redis.Redis`` client objects.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache call; its
constructor fills a case-insensitive table of ~170 response callbacks, which measured ~0.75 ms
of CPU per call — about 5 ms of every answer, which makes a few cache calls (loadtest/profile.py).
The clients share the connection pools anyway and are thread-safe, so one per pool is kept.
"""

from __future__ import annotations

import threading

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


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


class RedisCache(DjangoRedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with one client object per pool."""

    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = _KeptClients
