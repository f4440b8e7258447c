"""Rate limits: failed logins per username+IP (page and admin), judgment POSTs per user.

Both count in the database (``audit.limits``); the concurrency cases are in
``test_limits_concurrency.py``."""

from __future__ import annotations

import subprocess
import sys
import uuid

from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import PairJudgment
from tests.annotation.factories import PASSWORD
from tests.conftest import ROOT, subprocess_env

LOGIN = "/accounts/login/"


def _login(client, username, password, ip="10.0.0.1"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_failed_logins_lock_the_username_from_that_address(world, client, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    for _ in range(3):
        response = _login(client, "ann_a", "wrong")
        assert response.status_code == 200
        assert b'class="error"' in response.content
    locked = _login(client, "ann_a", PASSWORD)  # even the right password
    assert locked.status_code == 429
    assert b"Too many failed logins for this username from your address" in locked.content
    assert 0 < int(locked["Retry-After"]) <= settings.LOGIN_FAILURE_WINDOW
    assert "_auth_user_id" not in client.session
    # Another address, or another username, is not affected.
    assert _login(client, "ann_a", PASSWORD, ip="10.0.0.2").status_code == 302
    assert _login(APIClient(), "rev_a", PASSWORD).status_code == 302


def test_the_admin_login_is_locked_too(world, client, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    url = reverse("admin:login")
    for _ in range(2):
        client.post(url, {"username": "su", "password": "wrong"}, REMOTE_ADDR="10.0.0.3")
    response = client.post(url, {"username": "su", "password": PASSWORD}, REMOTE_ADDR="10.0.0.3")
    assert response.status_code == 200  # the admin's own form error
    assert "_auth_user_id" not in client.session


def test_a_successful_login_forgets_earlier_failures(world, client, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    _login(client, "ann_a", "wrong")
    assert _login(client, "ann_a", PASSWORD).status_code == 302
    client.logout()
    _login(client, "ann_a", "wrong")
    assert _login(client, "ann_a", PASSWORD).status_code == 302


def test_the_lock_ends_with_the_window(world, client, settings, monkeypatch):
    import time as time_module

    settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW = 1, 60
    _login(client, "ann_a", "wrong")
    assert _login(client, "ann_a", PASSWORD).status_code == 429
    later = time_module.time() + 61
    monkeypatch.setattr("audit.limits.time.time", lambda: later)
    monkeypatch.setattr("accounts.login_throttle.time.time", lambda: later)
    assert _login(client, "ann_a", PASSWORD).status_code == 302


def _post_judgment(client, world, i):
    item_a, item_b = world.items[10 + 2 * i], world.items[11 + 2 * i]
    return client.post(
        reverse("api-judgments", args=[world.study_a.pk]),
        {
            "item_a": item_a.pk,
            "item_b": item_b.pk,
            "label": "unsure",
            "client_id": str(uuid.uuid4()),
        },
        format="json",
    )


def test_judgment_posts_are_limited_per_user(world, settings):
    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 1, 3
    client = world.token_client("ann_a")
    assert [_post_judgment(client, world, i).status_code for i in range(3)] == [201] * 3
    before = PairJudgment.objects.count()
    refused = _post_judgment(client, world, 3)
    assert refused.status_code == 429
    assert "throttled" in refused.json()["detail"]
    assert int(refused["Retry-After"]) >= 1
    assert PairJudgment.objects.count() == before
    # Reads are not limited, and another user has a bucket of their own.
    assert client.get(reverse("api-judgments", args=[world.study_a.pk])).status_code == 200
    assert _post_judgment(world.token_client("rev_a"), world, 4).status_code == 201


def test_the_bucket_refills(world, settings, monkeypatch):
    import time as time_module

    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 2, 1
    client = world.token_client("ann_a")
    now = time_module.time()
    monkeypatch.setattr("audit.limits.time.time", lambda: now)
    assert _post_judgment(client, world, 0).status_code == 201
    assert _post_judgment(client, world, 1).status_code == 429
    monkeypatch.setattr("audit.limits.time.time", lambda: now + 0.6)
    assert _post_judgment(client, world, 1).status_code == 201


def test_rate_zero_turns_the_judgment_limit_off(world, settings):
    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 0, 1
    client = world.token_client("ann_a")
    assert {_post_judgment(client, world, i).status_code for i in range(5)} == {201}


def _settings_value(expression: str, **env) -> str:
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(DEBUG="1", SECRET_KEY=None, DJANGO_ALLOW_ASYNC_UNSAFE=None, **env),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_cache_is_shared_between_processes():
    backend = "settings.CACHES['default']['BACKEND']"
    assert _settings_value(backend, REDIS_URL=None).endswith("FileBasedCache")
    assert _settings_value(backend, REDIS_URL="redis://127.0.0.1:6379/3").endswith("RedisCache")
    rates = "settings.JUDGMENT_RATE, settings.JUDGMENT_BURST, settings.LOGIN_FAILURE_LIMIT"
    assert (
        _settings_value(rates, JUDGMENT_RATE="50", JUDGMENT_BURST="200", LOGIN_FAILURE_LIMIT="10")
        == "50 200 10"
    )
