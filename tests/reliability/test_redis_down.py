"""Redis stops: browser sessions keep working (issue 26, finding 1).

A private redis-server is the cache (and, for ``/healthz``, the broker) of a logged-in browser
session; it is stopped mid-test. Before the fix every page, the session-authenticated labelling
API and the login form answered 500 (``cached_db`` let the connection error escape) while
``/healthz`` said "ok". Now the session comes from the database: pages and the API answer,
an answer is stored once (its retry is the same judgment), a new login works, logout works,
``/healthz`` says "degraded"; once Redis is back everything is "ok" again.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid

import pytest
from django.db import OperationalError
from django.db.backends.utils import CursorWrapper
from django.test import Client
from django.urls import reverse

from annotation.models import PairJudgment
from tests.annotation.factories import PASSWORD, make_space, make_study, make_user
from tests.conftest import ROOT, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)


def _redis_cache(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "common.redis_cache.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": f"t{uuid.uuid4().hex[:8]}",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }


def _login(client: Client, username: str) -> int:
    """The login form as a browser fills it (CSRF cookie and field); the POST's status."""
    page = client.get(reverse("accounts:login"))
    assert page.status_code == 200
    token = client.cookies["csrftoken"].value
    response = client.post(
        reverse("accounts:login"),
        {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    return response.status_code


def _answer(client: Client, study, pair: dict, client_id: str):
    return client.post(
        reverse("api-judgments", args=[study.pk]) + "?next=1",
        {
            "item_a": pair["left"]["id"],
            "item_b": pair["right"]["id"],
            "label": "comparable",
            "client_id": client_id,
        },
        content_type="application/json",
        HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value,
    )


@pytest.fixture
def labelling(settings, media_root, private_redis):
    settings.CACHES = _redis_cache(private_redis.url)
    settings.CELERY_BROKER_URL = private_redis.url
    study = make_study(space=make_space())
    make_user("ann", study=study, role="annotator")
    make_user("second", study=study, role="annotator")
    return study


def test_browser_sessions_survive_a_redis_stop(labelling, private_redis):
    study = labelling
    browser = Client(enforce_csrf_checks=True)
    assert _login(browser, "ann") == 302
    pages = [
        reverse("home"),
        reverse("annotation:label", args=[study.pk]),
        reverse("annotation:study-list"),
    ]
    assert [browser.get(url).status_code for url in pages] == [200, 200, 200]
    next_url = reverse("api-next-pair", args=[study.pk])
    pair = browser.get(next_url).json()
    first = _answer(browser, study, pair, str(uuid.uuid4()))
    assert first.status_code == 201
    assert browser.get(reverse("healthz")).json()["status"] == "ok"

    private_redis.stop()

    began = time.perf_counter()
    assert [browser.get(url).status_code for url in pages] == [200, 200, 200]
    pair = browser.get(next_url)
    assert pair.status_code == 200
    client_id = str(uuid.uuid4())
    stored = _answer(browser, study, pair.json(), client_id)
    assert stored.status_code == 201, stored.content
    again = _answer(browser, study, pair.json(), client_id)  # the lost response, sent again
    assert again.status_code == 200
    assert again.json()["id"] == stored.json()["id"]
    assert stored.json()["next_pair"]["left"]["id"]
    # The login form: a new browser logs in while Redis is down, sees a page, logs out.
    other = Client(enforce_csrf_checks=True)
    assert _login(other, "second") == 302
    assert other.get(reverse("annotation:label", args=[study.pk])).status_code == 200
    out = other.post(reverse("accounts:logout"), HTTP_X_CSRFTOKEN=other.cookies["csrftoken"].value)
    assert out.status_code == 302
    assert other.get(reverse("home")).status_code == 302  # logged out: the session is gone
    health = browser.get(reverse("healthz"))
    assert health.status_code == 200
    assert health.json()["status"] == "degraded"
    assert health.json()["checks"] == {
        "database": "ok",
        "cache": "unreachable",
        "broker": "unreachable",
    }
    assert time.perf_counter() - began < 20  # a dead Redis costs milliseconds per call

    private_redis.start()  # same port, empty: the sessions are read from the database again

    assert [browser.get(url).status_code for url in pages] == [200, 200, 200]
    assert browser.get(reverse("healthz")).json()["status"] == "ok"
    assert PairJudgment.objects.filter(annotator__username="ann").count() == 2  # none doubled


def test_healthz_is_unhealthy_without_the_database(client, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("the database is gone")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json()["status"] == "unhealthy"
    assert response.json()["checks"]["database"] == "unreachable"


def test_redis_timeout_bounds_a_redis_that_never_answers():
    """REDIS_TIMEOUT_MS reaches the cache's client: a server that accepts connections and
    never answers (a hung Redis) costs the timeout per call (a miss), not minutes."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # connections complete in the backlog; nothing is ever read or sent
        port = silent.getsockname()[1]
        code = (
            "import time, django; django.setup()\n"
            "from django.core.cache import cache\n"
            "t = time.perf_counter()\n"
            "print(cache.get('x', 'missed'), round(time.perf_counter() - t, 3))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=subprocess_env(REDIS_URL=f"redis://127.0.0.1:{port}/0", REDIS_TIMEOUT_MS="300"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer, seconds = proc.stdout.split()
    assert answer == "missed"  # the cache's answer for a hung Redis: a miss
    assert 0.25 <= float(seconds) < 3.0  # the client's own retries included


def test_a_study_admin_s_pages_answer_while_redis_is_down(labelling, private_redis):
    study = labelling
    make_user("boss", study=study, role="admin")
    browser = Client(enforce_csrf_checks=True)
    assert _login(browser, "boss") == 302
    names = [
        "annotation:study-detail",
        "annotation:study-settings",
        "annotation:study-members",
        "annotation:study-items",
        "annotation:study-pairs",
        "annotation:study-gold",
        "annotation:review",
        "annotation:groups",
        "learning:study-dashboard",
        "learning:study-drift",
        "learning:audits",
    ]
    urls = [reverse(name, args=[study.pk]) for name in names]
    urls += [reverse("accounts:tokens"), reverse("home")]
    before = {url: browser.get(url).status_code for url in urls}
    assert set(before.values()) == {200}, [u for u, s in before.items() if s != 200]

    private_redis.stop()

    during = {url: browser.get(url).status_code for url in urls}
    assert during == before


def test_the_cache_is_empty_and_keeps_nothing_while_redis_is_down(settings, private_redis):
    from django.core.cache import caches

    settings.CACHES = _redis_cache(private_redis.url)
    cache = caches["default"]
    cache.set("k", 1)
    assert cache.get("k") == 1
    private_redis.stop()
    assert cache.get("k", "missed") == "missed"
    assert cache.get_many(["k"]) == {}
    assert cache.get_or_set("k", lambda: 2) == 2
    assert cache.add("k", 3) is False
    assert "k" not in cache
    cache.set("k", 4)
    cache.set_many({"k": 5})
    cache.delete("k")
    cache.delete_many(["k"])
    with pytest.raises(ValueError, match="not found"):
        cache.incr("k")
    private_redis.start()
    assert cache.get("k") is None  # an empty Redis again (no persistence)
    cache.set("k", 6)
    assert cache.get("k") == 6


def test_readyz_is_503_while_the_broker_is_down_and_healthz_stays_alive(
    settings, private_redis, client
):
    """Issue #39, item 8: ``/healthz`` answered 200 while Redis and the broker were down, so an
    orchestrator's probe could not hold the instance back. ``/readyz`` is the readiness answer;
    ``/healthz`` stays the liveness one (200: the process and its database live)."""
    settings.CACHES = _redis_cache(private_redis.url)
    settings.CELERY_BROKER_URL = private_redis.url
    ready = client.get(reverse("readyz"))
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"database": "ok", "broker": "ok"}}

    private_redis.stop()
    began = time.perf_counter()
    ready = client.get(reverse("readyz"))
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "not ready",
        "checks": {"database": "ok", "broker": "unreachable"},
    }
    assert client.get(reverse("healthz")).status_code == 200  # alive: not to be restarted
    assert time.perf_counter() - began < 5  # the probe answers in its own timeout

    private_redis.start()
    assert client.get(reverse("readyz")).status_code == 200


def test_readyz_is_503_without_the_database(client, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("the database is gone")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = client.get(reverse("readyz"))
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "unreachable"
