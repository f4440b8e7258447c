"""Sessions on a cache that does not answer (accounts/sessions.py), whatever the backend: here
Django's own Redis cache, which raises on every call (common.redis_cache already hides a down
Redis; the session engine must not rely on that). tests/reliability/test_redis_down.py stops a
real Redis under a browser session."""

from __future__ import annotations

import socket

import pytest
from django.contrib.sessions.models import Session
from django.core.cache import caches

from accounts.sessions import SessionStore


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def down_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
        }
    }
    with pytest.raises(Exception, match="onnect"):
        caches["default"].get("x")  # Django's backend lets the error out


@pytest.mark.django_db
def test_a_session_lives_in_the_database_while_the_cache_is_down(down_cache):
    store = SessionStore()
    store["who"] = "ann"
    store.save(must_create=True)  # exists() asks the cache first, then the database
    key = store.session_key
    assert Session.objects.filter(session_key=key).exists()
    assert SessionStore(key)["who"] == "ann"
    assert SessionStore().exists(key)
    again = SessionStore(key)
    again.cycle_key()  # a login: new key, the old one deleted
    assert SessionStore(again.session_key)["who"] == "ann"
    assert not SessionStore().exists(key)
    again.flush()  # a logout
    assert not Session.objects.exists()


@pytest.mark.django_db
def test_the_cached_copy_lives_at_most_session_cache_seconds(settings):
    settings.SESSION_CACHE_SECONDS = 7
    store = SessionStore()
    assert store._cache_seconds(1_209_600) == 7
    assert store._cache_seconds(3) == 3
