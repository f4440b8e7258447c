"""The attack of issue #39 replayed against the production configuration: its reproductions.

    .venv/bin/python -m loadtest.attack [--quick] [--json PATH]

Starts the throwaway stack of the load runs (gunicorn gthread, PostgreSQL, a private Redis, a
Celery worker, ``DEBUG=0``, everything on 127.0.0.1: loadtest/stack.py), seeds a study of words
and one of records, and sends, from real threads released together (``--races`` of them, 30 by
default, 10 with ``--quick``; every request times out after 60 s):

* **confirms** — five simultaneous confirmations of one 100-pair import preview: one import;
* **space deletes** — simultaneous deletes of one space: one 302, the others 404;
* **attach while deleting** — half the threads move an empty study onto a space, half delete it;
* **WEAT creates** — simultaneous creates of one WEAT test name (API): one 201;
* **WEAT renames** — simultaneous renames of different tests to one name (page): one saved;
* **non-finite search** — ``age:>inf``, ``>nan``, ``>=1e309``, ``<-Infinity`` in the item search
  (200, nothing) and the data browser (400);
* **overflows** — ``overlap`` 32,768 and 99,999,999, ``target_per_annotator`` 2³¹, a member's
  target 2³¹: 400;
* **parser bombs** — an import preview with a CSV field of 200 KB, one with JSON lines nested
  100,000 deep: 400.

Each check fails on any 5xx or a wrong outcome; the run prints one line per check and exits 1
when one failed (docs/security.md, "The attack's reproductions").
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .stack import Stack, stop_on_sigterm


def reverse(name: str, args=()) -> str:
    from django.urls import reverse as django_reverse

    return django_reverse(name, args=args)


CSRF = "c" * 32
TIMEOUT = 60
NON_FINITE = ["age:>inf", "age:>nan", "age:>=1e309", "age:<-Infinity"]
WORDS = {"x_words": ["w0", "w1"], "y_words": ["w2", "w3"], "a_words": ["w4"], "b_words": ["w5"]}
NAMES = {"x_name": "X", "y_name": "Y", "a_name": "A", "b_name": "B"}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(_NoRedirect)


def _send(url: str, *, data: bytes | None = None, headers: dict | None = None, method=None):
    request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with OPENER.open(request, timeout=TIMEOUT) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _all_at_once(n: int, send) -> list:
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        return send(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


class Client:
    """Requests as one person: a browser session (pages, CSRF) and an API token."""

    def __init__(self, base: str, session: str, token: str) -> None:
        self.base, self.session, self.token = base, session, token

    def form(self, path: str, fields: dict) -> int:
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": CSRF}).encode()
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={CSRF}; {self.session}",
        }
        return _send(self.base + path, data=data, headers=headers)

    def upload(self, path: str, name: str, content: bytes, fields: dict) -> int:
        boundary = uuid.uuid4().hex
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
            for k, v in {**fields, "csrfmiddlewaretoken": CSRF}.items()
        ]
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
            + content
            + b"\r\n"
        )
        data = b"".join(parts) + f"--{boundary}--\r\n".encode()
        headers = {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Cookie": f"csrftoken={CSRF}; {self.session}",
        }
        return _send(self.base + path, data=data, headers=headers)

    def page(self, path: str) -> int:
        return _send(self.base + path, headers={"Cookie": self.session})

    def api(self, method: str, path: str, body: dict | None = None) -> int:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        return _send(self.base + path, data=data, headers=headers, method=method)


def _check(name: str, statuses: list[int], expected: Counter | set, ok: bool, **figures) -> dict:
    counts = Counter(statuses)
    fine = ok and not any(s >= 500 for s in counts)
    if isinstance(expected, Counter):
        fine = fine and counts == expected
    else:
        fine = fine and set(counts) <= expected
    return {"check": name, "statuses": dict(sorted(counts.items())), "ok": fine, **figures}


def _space(name: str, rows: int = 10):
    """A small word space of its own (its own matrix file: deleting it removes only that)."""
    import numpy as np

    from spaces.services import space_from_matrix

    rng = np.random.default_rng(len(name))
    matrix = rng.normal(size=(rows, 4)).astype(np.float32)
    keys = [f"{name}-{i}" for i in range(rows)]
    return space_from_matrix(
        name=name, keys=keys, matrix=matrix, space_kind="words", item_kind="word", source="attack"
    )


def confirms(client: Client, world) -> dict:
    from annotation.models import FeedbackImport, PairJudgment
    from annotation.setup.imports.jobs import preview_keep

    study = world["words"]
    rows = "".join(f"w{i},w{i + 1},comparable\n" for i in range(100))
    choice = {"name": "attack.csv", "kind": "auto", "fmt": "auto", "provenance": "attack"}
    job = preview_keep(
        study=study, user=world["lead"], data=f"key_a,key_b,label\n{rows}".encode(), choice=choice
    )
    session = world["session_store"]
    session["feedback-import"] = {"token": job.token, "study": study.pk, **choice}
    session.save()
    path = reverse("annotation:study-import", args=[study.pk])
    statuses = _all_at_once(5, lambda i: client.form(path, {"confirm": "1", "token": job.token}))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in ("done", "failed"):
            break
        time.sleep(0.5)
    stored = PairJudgment.objects.filter(study=study, provenance="attack").count()
    return _check(  # 400: a session read after the winner's answer forgot the preview
        "confirms",
        statuses,
        {302, 409, 400},
        statuses.count(302) == 1 and job.status == FeedbackImport.Status.DONE and stored == 100,
        stored=stored,
        import_status=job.status,
    )


def space_deletes(client: Client, n: int) -> dict:
    from spaces.models import EmbeddingSpace

    space = _space("doomed")
    path = reverse("spaces:delete", args=[space.pk])
    statuses = _all_at_once(n, lambda i: client.form(path, {}))
    gone = not EmbeddingSpace.objects.filter(pk=space.pk).exists()
    return _check("space deletes", statuses, Counter({302: 1, 404: n - 1}), gone)


def attach_while_deleting(client: Client, world, n: int) -> dict:
    from annotation.models import Study

    space = _space("contested")
    study = Study.objects.create(name="Empty study", space=world["words"].space)

    def one(i):
        if i % 2:
            return client.form(reverse("spaces:delete", args=[space.pk]), {})
        return client.api("PATCH", reverse("api-study", args=[study.pk]), {"space": space.pk})

    statuses = _all_at_once(n, one)
    study.refresh_from_db()
    consistent = study.space_id in (space.pk, world["words"].space_id)
    return _check("attach while deleting", statuses, {200, 302, 400, 404, 409}, consistent)


def weat_creates(client: Client, world, n: int) -> dict:
    from learning.models import WeatTest

    study = world["words"]
    body = {"name": "One name", "kind": "meaningful", **NAMES, **WORDS}
    path = reverse("api-weat-tests", args=[study.pk])
    statuses = _all_at_once(n, lambda i: client.api("POST", path, body))
    made = WeatTest.objects.filter(name="One name").count()
    return _check("WEAT creates", statuses, {201, 400, 409}, made == 1 and 201 in statuses)


def weat_renames(client: Client, world, n: int) -> dict:
    from learning.evaluation.weat_tests import weat_draft, weat_test_save
    from learning.models import WeatTest

    study, lead = world["words"], world["lead"]
    tests = []
    for i in range(n):
        draft = weat_draft(study=study, name=f"t{i}", kind="meaningful", names=NAMES, words=WORDS)
        tests.append(weat_test_save(user=lead, study=study, draft=draft))
    fields = {"action": "save", "name": "Renamed", "kind": "meaningful", **NAMES}
    fields |= {s: "\n".join(ws) for s, ws in WORDS.items()}
    paths = [reverse("learning:study-weat-test-edit", args=[study.pk, t.pk]) for t in tests]
    statuses = _all_at_once(n, lambda i: client.form(paths[i], fields))
    renamed = WeatTest.objects.filter(name="Renamed").count()
    return _check("WEAT renames", statuses, {302, 400, 409}, renamed == 1 and 302 in statuses)


def non_finite_search(client: Client, world) -> dict:
    study = world["records"]
    statuses, ok = [], True
    for query in NON_FINITE:
        q = urllib.parse.quote(query)
        api = client.api("GET", reverse("api-items") + f"?study={study.pk}&q={q}")
        page = client.page(reverse("annotation:study-browse", args=[study.pk]) + f"?q={q}")
        statuses += [api, page]
        ok = ok and api == 200 and page == 400
    return _check("non-finite search", statuses, {200, 400}, ok)


def overflows(client: Client, world) -> dict:
    study = world["words"]
    url = reverse("api-study", args=[study.pk])
    members = reverse("api-study-members", args=[study.pk])
    statuses = [
        client.api("PATCH", url, {"overlap": 32768}),
        client.api("PATCH", url, {"target_per_annotator": 2**31}),
        client.api("POST", members, {"username": "big", "target": 2**31}),
    ]
    form = {
        "name": study.name,
        "space": study.space_id,
        "mode": study.mode,
        "pool": "all",
        "strategy": study.strategy,
        "overlap": "99999999",
        "gold_rate": "0",
        "target_per_annotator": "5",
    }
    statuses.append(client.form(reverse("annotation:study-settings", args=[study.pk]), form))
    return _check("overflows", statuses, Counter({400: 4}), True)


def parser_bombs(client: Client, world) -> dict:
    path = reverse("annotation:study-import", args=[world["words"].pk])
    fields = {"kind": "auto", "fmt": "auto", "provenance": ""}
    big = b"key_a,key_b,label\nw1," + b"x" * 200_000 + b",1\n"
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    statuses = [
        client.upload(path, "big.csv", big, fields),
        client.upload(path, "deep.jsonl", deep, fields),
    ]
    return _check("parser bombs", statuses, Counter({400: 2}), True)


def _world(stack: Stack) -> tuple[Client, dict]:
    import pandas as pd
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client as DjangoClient

    from accounts.tokens import api_token_create
    from annotation.models import Study
    from spaces.records.create import record_space_create

    lead = get_user_model().objects.create_user("attack-lead", is_staff=True)
    _, token = api_token_create(user=lead, name="attack")
    browser = DjangoClient()
    browser.force_login(lead)
    cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value
    frame = pd.DataFrame({"name": [f"p{i}" for i in range(50)], "age": range(20, 70)})
    frame["sex"] = ["F", "M"] * 25
    people = record_space_create(
        name="attack people", frame=frame, numeric=["age"], categorical=["sex"], key_column="name"
    )
    world = {
        "lead": lead,
        "words": Study.objects.get(name="load study"),
        "records": Study.objects.create(name="Attack records", space=people),
        "session_store": browser.session,
    }
    session = f"{settings.SESSION_COOKIE_NAME}={cookie}"
    return Client(stack.base_url, session, token), world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 threads per race (tests)")
    parser.add_argument("--races", type=int, default=30, help="threads released together")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--show-log", action="store_true", help="print the web log's end")
    args = parser.parse_args(argv)
    n = 10 if args.quick else max(2, min(args.races, 60))
    stop_on_sigterm()
    stack = Stack(web_workers=2, web_threads=16)
    began = time.monotonic()
    try:
        stack.start_database()
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        from .seed import seed

        seed(annotators=1, items=400, dim=8, history=0)
        from django.db import connections

        connections.close_all()
        stack.start_services()
        client, world = _world(stack)
        results = [
            confirms(client, world),
            space_deletes(client, n),
            attach_while_deleting(client, world, n),
            weat_creates(client, world, n),
            weat_renames(client, world, n),
            non_finite_search(client, world),
            overflows(client, world),
            parser_bombs(client, world),
        ]
        if args.show_log:
            print(stack.log_tail("web", 60))
    finally:
        stack.stop()
    for r in results:
        extra = {k: v for k, v in r.items() if k not in ("check", "statuses", "ok")}
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['check']}: statuses {r['statuses']} {extra}")
    seconds = round(time.monotonic() - began, 1)
    print(f"{sum(r['ok'] for r in results)} of {len(results)} checks held ({seconds} s)")
    if args.json:
        args.json.write_text(json.dumps({"races": n, "seconds": seconds, "checks": results}))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
