"""Audit flood: while reviewers post model audits as fast as they are let, does a refit still start
on time? (issue 39: 6 clients made 91 audits in 30 s and answers waited 91 s for their refit.)

    .venv/bin/python -m loadtest.audits [--quick] [--clients 6] [--seconds 60] [--shared-queue]
                                        [--json FILE]

The stack of the load run (gunicorn, PostgreSQL, a private Redis; the refits', the dashboards'
and the audits' workers, as ``make run`` starts them) and a seeded study with a ready metric
version. Two phases of ``--seconds`` each: **quiet** (one annotator answers every few seconds)
and **flood** (the same, while ``--clients`` reviewers, each with an API token, post audits of
``--audit-items`` pool items in a loop: after a 429 they wait its ``Retry-After``, capped at 2 s).
For each answer: how long after it the refit started (``RefitState.last_started_at``; it includes
the debounce of ``LEARNING_DEBOUNCE_SECONDS``). Printed: each phase's median and worst, the
audits' statuses (201, 429), and how many audits reached ``done``. ``--shared-queue`` sends the
audits to the refits' queue (as before the fix; no audits worker) for comparison.

The fault run uses :func:`audit_setup` and :func:`post_audit` to queue audits before a broker
restart (``loadtest/faults.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter

import numpy as np

from .options import add_common_arguments, make_stack, quick_defaults
from .stack import Stack, stop_on_sigterm

BOUNDARY = "fmauditflood"


def audit_setup(study_id: int, reviewers: int) -> list[str]:
    """``reviewers`` reviewers of the study with API tokens, and a ready published metric version
    (Σ = I) if the study has none; their tokens."""
    import hashlib
    import io

    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile

    from accounts.tokens import api_token_create
    from annotation.models import Membership, Study
    from learning.models import MetricVersion

    study = Study.objects.select_related("space").get(pk=study_id)
    # audits run under the published metric (learning/audits/services.py: audit_version)
    if not MetricVersion.objects.ready().filter(study=study, is_published=True).exists():
        buffer = io.BytesIO()
        np.save(buffer, np.eye(study.space.dimension))
        data = buffer.getvalue()
        version = MetricVersion(
            study=study,
            method=MetricVersion.Method.EXPLORE,
            status=MetricVersion.Status.READY,
            sigma_sha256=hashlib.sha256(data).hexdigest(),
            dimension=study.space.dimension,
            judgment_watermark=0,
            is_published=True,
            label="identity (audit load)",
        )
        version.sigma.save("sigma-identity.npy", ContentFile(data), save=False)
        version.save()
    tokens = []
    for n in range(reviewers):
        user = get_user_model().objects.create_user(
            username=f"auditor{n}-{uuid.uuid4().hex[:6]}", password=uuid.uuid4().hex
        )
        Membership.objects.create(user=user, study=study, role=Membership.Role.REVIEWER)
        tokens.append(api_token_create(user=user, name="audit load")[1])
    return tokens


def scores_csv(items: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    keys = rng.choice(items, size=items, replace=False)
    rows = "".join(f"w{k},{s:.4f}\n" for k, s in zip(keys, rng.random(items), strict=True))
    return ("key,score\n" + rows).encode()


def _multipart(fields: dict[str, str], file: bytes) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts.append(
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="predictions"; '
        'filename="scores.csv"\r\nContent-Type: text/csv\r\n\r\n'.encode()
        + file
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    return b"".join(parts)


def post_audit(base_url: str, token: str, study_id: int, file: bytes, k: int = 10):
    """POST one audit; (status, the answer's JSON or {}, Retry-After or None)."""
    request = urllib.request.Request(
        f"{base_url}/api/studies/{study_id}/audits/",
        data=_multipart({"k": str(k)}, file),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read() or b"{}"), None
    except urllib.error.HTTPError as error:
        return error.code, {}, error.headers.get("Retry-After")
    except OSError:
        return 0, {}, None


def _json(base_url: str, token: str, method: str, path: str, body: dict | None = None):
    request = urllib.request.Request(
        base_url + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, {}


def refit_delays(base_url: str, token: str, study_id: int, seconds: float, every: float):
    """Answer one pair every ``every`` s for ``seconds``; for each answer, the seconds until a
    refit started after it (None: none within 60 s)."""
    from annotation.models import Study
    from learning.models import RefitState

    study = Study.objects.get(pk=study_id)
    base = f"/api/studies/{study_id}"
    delays, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        status, pair = _json(base_url, token, "GET", f"{base}/next-pair/")
        if status != 200 or not pair.get("left"):
            time.sleep(1)
            continue
        body = {
            "item_a": pair["left"]["id"],
            "item_b": pair["right"]["id"],
            "label": "comparable",
            "client_id": str(uuid.uuid4()),
        }
        answered = time.time()
        if _json(base_url, token, "POST", f"{base}/judgments/", body)[0] != 201:
            continue
        started = None
        while time.time() < answered + 60:
            state = RefitState.objects.filter(study=study).first()
            begun = state and state.last_started_at
            if begun and begun.timestamp() >= answered:
                started = begun.timestamp() - answered
                break
            time.sleep(0.05)
        delays.append(started)
        time.sleep(max(0.0, every - (time.time() - answered)))
    return delays


def flood(base_url, tokens, study_id, file: bytes, stop: threading.Event) -> Counter:
    """Each token posts audits until ``stop``; the statuses seen."""
    seen: Counter = Counter()
    lock = threading.Lock()

    def client(token: str) -> None:
        while not stop.is_set():
            status, _, retry = post_audit(base_url, token, study_id, file)
            with lock:
                seen[status] += 1
            if status != 201:
                stop.wait(min(2.0, float(retry or 1)))

    threads = [threading.Thread(target=client, args=(t,), daemon=True) for t in tokens]
    for thread in threads:
        thread.start()
    stop.wait()
    for thread in threads:
        thread.join(timeout=90)
    return seen


def _summary(delays: list) -> dict:
    done = [d for d in delays if d is not None]
    return {
        "answers": len(delays),
        "no_refit_within_60_s": len(delays) - len(done),
        "median_s": round(statistics.median(done), 2) if done else None,
        "max_s": round(max(done), 2) if done else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    parser.add_argument("--clients", type=int, default=6, help="reviewers posting audits")
    parser.add_argument("--audit-items", type=int, default=2000, help="items each audit scores")
    parser.add_argument("--every", type=float, default=6.0, help="seconds between answers")
    parser.add_argument(
        "--shared-queue", action="store_true", help="audits on the refits' queue (before the fix)"
    )
    args = parser.parse_args(argv)
    stop_on_sigterm()
    if args.quick:
        quick_defaults(args)
        args.seconds, args.history, args.dim, args.items = 12.0, 300, 10, 600
        args.audit_items, args.clients, args.every = 300, 3, 4.0
    args.annotators = 1
    stack: Stack = make_stack(args)
    if args.shared_queue:
        stack.extra_env["CELERY_AUDIT_QUEUE"] = stack.env()["CELERY_TASK_DEFAULT_QUEUE"]
    from .load import prepare

    problems: list[str] = []
    try:
        world = prepare(stack, args)
        if args.shared_queue:
            stack._stop("audits")
        tokens = audit_setup(world.study_id, args.clients)
        file = scores_csv(min(args.audit_items, args.items), seed=1)
        print(f"stack {stack.base_url}; {args.clients} reviewers; audits of {len(file):,} bytes")
        quiet = refit_delays(
            stack.base_url, world.tokens[0], world.study_id, args.seconds, args.every
        )
        stop = threading.Event()
        result: dict = {}
        flooder = threading.Thread(
            target=lambda: result.update(
                statuses=flood(stack.base_url, tokens, world.study_id, file, stop)
            )
        )
        flooder.start()
        time.sleep(min(3.0, args.seconds / 4))  # the audits queue up first
        during = refit_delays(
            stack.base_url, world.tokens[0], world.study_id, args.seconds, args.every
        )
        stop.set()
        flooder.join()
        from learning.models import ModelAudit

        audits = Counter(ModelAudit.objects.values_list("status", flat=True))
        report = {
            "mode": "quick" if args.quick else "full",
            "shared_queue": args.shared_queue,
            "clients": args.clients,
            "seconds": args.seconds,
            "quiet": _summary(quiet),
            "flood": _summary(during),
            "audit_posts": dict(result.get("statuses", {})),
            "audits_by_status": dict(audits),
        }
        if not quiet or not during:
            problems.append("no answers measured")
        if report["flood"]["no_refit_within_60_s"]:
            problems.append("answers whose refit did not start within 60 s during the flood")
        if report["audit_posts"].keys() - {201, 429}:
            problems.append(f"audit posts answered other than 201/429: {report['audit_posts']}")
        report["problems"] = problems
        print(json.dumps(report, indent=2))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
    finally:
        stack.stop()
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
