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


def _session_save_losing_its_connection(monkeypatch):
    """Session rows whose save loses the database connection (as the fault run's
    ``terminate-db`` does to a request in flight)."""
    from django.db import OperationalError

    def lost(self, *args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(Session, "save", lost)


@pytest.mark.django_db
def test_a_session_save_that_loses_the_database_is_a_database_error_not_a_bad_request(
    monkeypatch,
):
    """Django turns any database error of a session update into ``UpdateError``, which its
    middleware answers 400 ("session deleted"); a lost connection is the server's failure (5xx,
    retried by clients), and a session truly deleted meanwhile is still ``UpdateError``."""
    from django.contrib.sessions.backends.base import UpdateError
    from django.db import OperationalError

    store = SessionStore()
    store["who"] = "ann"
    store.save(must_create=True)
    gone = SessionStore(store.session_key)
    gone["who"] = "bob"
    Session.objects.filter(session_key=store.session_key).delete()
    with pytest.raises(UpdateError):
        gone.save()  # deleted meanwhile (a logout elsewhere): Django's 400 stays
    store["who"] = "cid"
    _session_save_losing_its_connection(monkeypatch)
    with pytest.raises(OperationalError):
        store.save()


@pytest.mark.django_db
def test_a_login_whose_session_save_loses_the_database_is_answered_500(client, monkeypatch):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("ann", password="pw-ann-123456")
    client.raise_request_exception = False
    calls = {"n": 0}
    real = Session.save

    def second_save_fails(self, *args, **kwargs):
        calls["n"] += 1  # the first: the new key the login cycles to; then the response's
        if calls["n"] > 1:
            from django.db import OperationalError

            raise OperationalError("server closed the connection unexpectedly")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Session, "save", second_save_fails)
    response = client.post("/accounts/login/", {"username": "ann", "password": "pw-ann-123456"})
    assert calls["n"] >= 2
    assert response.status_code == 500  # not 400: a client retries a 5xx
