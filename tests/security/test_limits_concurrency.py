"""The limits hold under concurrency: 30 simultaneous requests from real threads against a live
server (Django's threaded WSGI server, one database connection per request thread), on the
configured database (PostgreSQL in CI).

Each case releases its 30 requests together (a barrier) and counts what got through:

* login: 30 wrong passwords for one username from one address → at most ``LOGIN_FAILURE_LIMIT``
  passwords checked (counted by a spy backend after the throttle), the rest refused;
* judgments: 30 POSTs of one user against a bucket of 10 (refill 0.01/s) → at most 10 stored;
* tokens: 30 creates of one user with 15 active already (cap 20) → exactly 20 active.

Before the fix the same cases gave 28 of 30 checked (limit 5), all judgments accepted, and
27 active tokens (cap 20).
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from django.contrib.auth.backends import ModelBackend
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.db import connection
from django.urls import reverse

from accounts.models import ApiToken
from accounts.tokens import MAX_ACTIVE_TOKENS, api_token_create
from annotation.labelling.throttles import JudgmentRateThrottle
from annotation.models import PairJudgment
from spaces.models import Item
from tests.annotation.factories import make_space, make_study, make_user

pytestmark = pytest.mark.django_db(transaction=True)

N = 30
CHECKED: list[str] = []
_checked_lock = threading.Lock()


class CountingBackend(ModelBackend):
    """After the throttle: records every password actually checked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        with _checked_lock:
            CHECKED.append(username)
        return super().authenticate(request, username=username, password=password, **kwargs)


def _all_at_once(send) -> list:
    barrier = threading.Barrier(N)

    def one(i):
        barrier.wait()
        return send(i)

    with ThreadPoolExecutor(N) as pool:
        return list(pool.map(one, range(N)))


CSRF = "c" * 32  # a CSRF secret as both cookie and form field (Django accepts the pair)


def _form(fields: dict, cookie: str = "") -> tuple[bytes, dict]:
    data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": CSRF}).encode()
    cookies = "; ".join(filter(None, [f"csrftoken={CSRF}", cookie]))
    return data, {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookies}


def _request(url: str, data: bytes | None = None, headers: dict | None = None) -> int:
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class _Server(ThreadedWSGIServer):
    request_queue_size = 128  # 30 simultaneous connections: the default backlog (10) resets some


@pytest.fixture
def server(transactional_db):
    """A threaded WSGI server of the whole app on a free port (one thread per request), with a
    listen backlog for 30 simultaneous clients; ``.url`` as pytest-django's."""
    server = _Server(("127.0.0.1", 0), WSGIRequestHandler)
    server.set_app(get_wsgi_application())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


@pytest.fixture
def space(media_root):
    return make_space(n_words=80)


def test_thirty_concurrent_wrong_passwords_check_at_most_the_limit(server, settings, space):
    settings.LOGIN_FAILURE_LIMIT = 5
    settings.AUTHENTICATION_BACKENDS = [
        "accounts.login_throttle.LoginThrottleBackend",
        "tests.security.test_limits_concurrency.CountingBackend",
    ]
    make_user("victim")
    CHECKED.clear()
    url = server.url + reverse("accounts:login")
    statuses = _all_at_once(
        lambda i: _request(url, *_form({"username": "victim", "password": f"wrong{i}"}))
    )
    assert len(CHECKED) <= settings.LOGIN_FAILURE_LIMIT, (len(CHECKED), statuses)
    assert len(CHECKED) >= 1
    assert 500 not in statuses


def test_thirty_concurrent_judgments_take_at_most_the_burst(server, settings, space, redis_url):
    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 1, 10  # 1/s: a 30-way burst lasts < 1 s
    # Production's shared cache (the limit no longer uses it; a cache-based bucket raced here).
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
        }
    }
    study = make_study(space=space)
    user = make_user("ann", study=study, role="annotator")
    _, key = api_token_create(user=user, name="burst")
    ids = list(Item.objects.filter(space=space).order_by("id").values_list("id", flat=True))
    url = server.url + reverse("api-judgments", args=[study.pk])
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def post(i):
        body = (
            f'{{"item_a": {ids[2 * i]}, "item_b": {ids[2 * i + 1]}, '
            f'"label": "comparable", "client_id": "{uuid.uuid4()}"}}'
        )
        return _request(url, data=body.encode(), headers=headers)

    statuses = _all_at_once(post)
    stored = PairJudgment.objects.filter(annotator=user).count()
    # 10 from the bucket, plus at most what 1/s refills while the burst is served.
    assert stored == statuses.count(201)
    assert 10 <= stored <= 10 + 3, statuses
    assert set(statuses) <= {201, 429}


def test_thirty_concurrent_token_creates_stop_at_the_cap(server, client, settings, space):
    # A reviewer: someone allowed to create tokens (annotation.access.may_export).
    user = make_user("scripted", study=make_study(space=space), role="reviewer")
    for i in range(MAX_ACTIVE_TOKENS - 5):
        api_token_create(user=user, name=f"existing {i}")
    client.force_login(user)
    session = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    url = server.url + reverse("accounts:tokens")
    statuses = _all_at_once(lambda i: _request(url, *_form({"name": f"job {i}"}, session)))
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
    assert active == MAX_ACTIVE_TOKENS, statuses
    assert statuses.count(200) == 5
    assert statuses.count(400) == N - 5


def test_thirty_threads_taking_from_one_bucket_get_exactly_the_burst(
    settings, redis_url, transactional_db
):
    """The throttle itself, 30 threads at once with nothing else to do (the race is widest)."""
    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 1, 10
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
        }
    }
    user = make_user("hasty")
    request = SimpleNamespace(user=user)

    def take(i):
        try:
            return JudgmentRateThrottle().allow_request(request, None)
        finally:
            connection.close()

    granted = _all_at_once(take)
    assert 10 <= granted.count(True) <= 11, granted  # 1/s may refill one during the burst
