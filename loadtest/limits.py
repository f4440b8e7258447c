"""The rate limits under concurrency, against the production configuration.

    .venv/bin/python -m loadtest.limits [--quick] [--web-workers 4] [--web-threads 8]

Starts the throwaway stack of the load runs (gunicorn gthread, PostgreSQL, a private Redis,
``DEBUG=0``; loadtest/stack.py) with the production limits (5 failed logins per username+IP,
judgments 60 + 5/s per user, 20 active API tokens) and sends, from real threads released
together:

* **login**: rounds of 30 simultaneous logins for one username, one of them (at a random
  position) with the right password. The right password can only succeed when it is among the
  passwords actually checked, so the share of rounds that log in measures how many of the 30
  were checked (5 of 30 checked: ~17 %; all checked: 100 %);
* **judgments**: 150 simultaneous POSTs of one user; accepted vs the bucket's bound
  ``burst + rate × elapsed``;
* **tokens**: 30 simultaneous creates of one user with none active; active tokens after.

Prints the figures (docs/security.md) and exits 1 when a limit did not hold.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

from .stack import Stack, stop_on_sigterm

LOGIN_LIMIT, BURST, RATE, TOKEN_CAP = 5, 60, 5, 20
CSRF = "c" * 32
PASSWORD = "the-right-password-1"


def _post(url: str, data: bytes, headers: dict) -> int:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _all_at_once(n: int, send) -> tuple[list, float]:
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        return send(i)

    began = time.monotonic()
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(one, range(n)))
    return results, time.monotonic() - began


def _form(fields: dict, cookie: str = "") -> tuple[bytes, dict]:
    data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": CSRF}).encode()
    cookies = "; ".join(filter(None, [f"csrftoken={CSRF}", cookie]))
    return data, {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookies}


def login_rounds(base: str, rounds: int, n: int = 30) -> dict:
    from django.contrib.auth import get_user_model

    urllib.request.install_opener(urllib.request.build_opener(_NoRedirect))
    logged_in = 0
    statuses: dict[int, int] = {}
    for r in range(rounds):
        username = f"victim-{r}"
        get_user_model().objects.create_user(username, password=PASSWORD)
        right = random.randrange(n)

        def attempt(i, username=username, right=right):
            password = PASSWORD if i == right else f"wrong-{i}"
            return _post(
                base + "/accounts/login/", *_form({"username": username, "password": password})
            )

        results, _ = _all_at_once(n, attempt)
        for status in results:
            statuses[status] = statuses.get(status, 0) + 1
        logged_in += results[right] == 302
    return {"rounds": rounds, "right_password_logged_in": logged_in, "statuses": statuses}


def judgment_burst(base: str, study_id: int, token: str, item_ids: list[int], n: int = 150) -> dict:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(i):
        body = (
            f'{{"item_a": {item_ids[2 * i]}, "item_b": {item_ids[2 * i + 1]}, '
            f'"label": "comparable", "client_id": "{uuid.uuid4()}"}}'
        )
        return _post(f"{base}/api/studies/{study_id}/judgments/", body.encode(), headers)

    results, elapsed = _all_at_once(n, post)
    accepted = results.count(201)
    return {
        "sent": n,
        "accepted": accepted,
        "refused_429": results.count(429),
        "other": sorted(set(results) - {201, 429}),
        "seconds": round(elapsed, 2),
        "bound": BURST + RATE * elapsed,
    }


def token_creates(base: str, study_id: int, n: int = 30) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.models import ApiToken
    from annotation.models import Membership

    user = get_user_model().objects.create_user("scripted", password=PASSWORD)
    # A reviewer: only people who may export may create tokens (annotation.access.may_export).
    Membership.objects.create(user=user, study_id=study_id, role=Membership.Role.REVIEWER)
    client = Client()
    client.force_login(user)
    from django.conf import settings

    session = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    results, _ = _all_at_once(
        n, lambda i: _post(base + "/account/tokens/", *_form({"name": f"job {i}"}, session))
    )
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
    return {
        "sent": n,
        "created_200": results.count(200),
        "refused_400": results.count(400),
        "other": sorted(set(results) - {200, 400}),
        "active": active,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer login rounds (tests)")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--web-threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20, help="login rounds of 30")
    parser.add_argument("--show-log", action="store_true", help="print the web log's end")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.web_workers, args.web_threads = 3, 2, 8
    stop_on_sigterm()
    stack = Stack(
        web_workers=args.web_workers,
        web_threads=args.web_threads,
        extra_env={
            "JUDGMENT_RATE": str(RATE),
            "JUDGMENT_BURST": str(BURST),
            "LOGIN_FAILURE_LIMIT": str(LOGIN_LIMIT),
        },
    )
    try:
        stack.start_database()
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)  # pages (login, tokens)
        from spaces.models import Item

        from .seed import seed

        world = seed(annotators=1, items=400, dim=8, history=0)
        item_ids = list(Item.objects.order_by("row").values_list("id", flat=True))
        from django.db import connections

        connections.close_all()
        stack.start_services()
        print(
            f"gunicorn {args.web_workers} workers x {args.web_threads} threads, PostgreSQL, "
            f"Redis, DEBUG=0",
            flush=True,
        )
        logins = login_rounds(stack.base_url, args.rounds)
        judgments = judgment_burst(stack.base_url, world.study_id, world.tokens[0], item_ids)
        tokens = token_creates(stack.base_url, world.study_id)
        if args.show_log:
            print(stack.log_tail("web", 60))
    finally:
        stack.stop()
    share = logins["right_password_logged_in"] / logins["rounds"]
    print(
        f"login: {logins['rounds']} rounds of 30 simultaneous attempts (limit {LOGIN_LIMIT}): "
        f"the right password logged in {logins['right_password_logged_in']} times "
        f"({share:.0%}; {LOGIN_LIMIT} of 30 checked would be {LOGIN_LIMIT / 30:.0%}); "
        f"statuses {logins['statuses']}"
    )
    print(
        f"judgments: {judgments['accepted']} of {judgments['sent']} simultaneous POSTs accepted "
        f"in {judgments['seconds']} s (bound {BURST} + {RATE}/s x elapsed = "
        f"{judgments['bound']:.1f}); 429: {judgments['refused_429']}; other: {judgments['other']}"
    )
    print(
        f"tokens: {tokens['sent']} simultaneous creates -> {tokens['active']} active "
        f"(cap {TOKEN_CAP}); 200: {tokens['created_200']}, 400: {tokens['refused_400']}, "
        f"other: {tokens['other']}"
    )
    problems = []
    if judgments["accepted"] > judgments["bound"] or judgments["other"]:
        problems.append("judgment limit exceeded or other statuses")
    if tokens["active"] != TOKEN_CAP:
        problems.append("token cap not exact")
    if 500 in logins["statuses"]:
        problems.append("a login answered 500")
    for problem in problems:
        print("FAIL:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
