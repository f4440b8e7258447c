"""CPU and queries per answer, by component: one annotator's answers (``POST judgments/?next=1``)
through Django's whole request path (middleware, DRF, the view, the services, the cache) in
this process, against the stack's PostgreSQL and Redis.

    .venv/bin/python -m loadtest.profile [--answers 400] [--json FILE]

(``make load`` runs it after the load, on the same stack.) Three passes over fresh pairs:

1. **plain** — CPU of this process per answer (``time.process_time``) and of the PostgreSQL
   backend serving it (``/proc/<pg_backend_pid()>/stat``);
2. **queries** — statements per answer (Django's query log; the refit hook's read after the
   commit included);
3. **profiled** — cProfile; each component's share of the profiled time (inclusive time of its
   entry function) is applied to the plain pass's CPU, so the figures are not inflated by the
   profiler.

Load-independent: one request at a time, so the figures do not depend on other work on the
machine (beyond cache effects). Without the HTTP server's parsing (gunicorn adds ~0.3 ms).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import sys
import time
from collections import Counter
from pathlib import Path

from .options import make_stack, quick_defaults
from .stack import stop_on_sigterm

# component -> (path suffix, function name) of its entry point; inclusive times.
COMPONENTS = {
    "auth (API token)": ("accounts/tokens.py", "authenticate"),
    "access (study, role)": ("annotation/access.py", "has_permission"),
    "rate limit": ("annotation/labelling/throttles.py", "allow_request"),
    "request parsing + validation": ("annotation/serializers.py", None),  # see _serializer_time
    "judgment insert (service)": ("annotation/labelling/services.py", "judgment_create"),
    "refit hook": ("annotation/hooks.py", "feedback_changed"),
    "refit hook (after commit)": ("learning/refits/scheduling.py", "refit_mark_due"),
    "next pair": ("annotation/labelling/api.py", "_next_pair_data"),
    "response (JudgmentSerializer + JSON)": ("rest_framework/response.py", "rendered_content"),
}


def _cpu_of(pid: int) -> float:
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Answerer:
    """One annotator answering through Django's test client (the full WSGI request path)."""

    def __init__(self, study_id: int, token: str) -> None:
        from django.test import Client

        self.url = f"/api/studies/{study_id}/judgments/?next=1"
        self.next_url = f"/api/studies/{study_id}/next-pair/"
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
        self.pair = None
        self.n = 0

    def answer(self) -> None:
        if self.pair is None or self.pair["done"]:
            self.pair = self.client.get(self.next_url).json()
            if self.pair["done"]:
                raise SystemExit("profile: the study ran out of pairs for this annotator")
        self.n += 1
        body = {
            "item_a": self.pair["left"]["id"],
            "item_b": self.pair["right"]["id"],
            "label": ("comparable", "incomparable", "unsure")[self.n % 3],
            "client_id": str(__import__("uuid").uuid4()),
            "elapsed_ms": 900,
        }
        response = self.client.post(self.url, json.dumps(body), content_type="application/json")
        if response.status_code != 201:
            raise SystemExit(f"profile: answer {response.status_code} {response.content[:200]!r}")
        self.pair = response.json().get("next_pair")


def _inclusive(stats: pstats.Stats, suffix: str, name: str | None) -> float:
    """Inclusive seconds of the outermost calls of matching functions (recursion counted once)."""
    total = 0.0
    for (filename, _, func), (_, _, _, cumulative, _) in stats.stats.items():
        if filename.endswith(suffix) and (name is None or func == name):
            if name is None and not func.startswith(("is_valid", "to_internal_value")):
                continue
            total += cumulative
    return total


def _kind(sql: str) -> str:
    """``SELECT annotation_item`` and the like: the verb and the first table."""
    verb = sql.split(None, 1)[0].upper()
    match = re.search(r'(?:FROM|INTO|UPDATE)\s+"?([a-z_]+)', sql)
    return f"{verb} {match.group(1) if match else ''}".strip()


def profile_answers(study_id: int, token: str, answers: int = 400) -> dict:
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.JUDGMENT_RATE = 1_000_000  # the limit still runs (and is measured), never refuses
    settings.JUDGMENT_BURST = 1_000_000
    who = Answerer(study_id, token)
    for _ in range(50):  # warm-up: facts, queue, connections
        who.answer()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    cpu0, pg0, wall0 = time.process_time(), _cpu_of(backend), time.perf_counter()
    for _ in range(answers):
        who.answer()
    cpu = (time.process_time() - cpu0) / answers
    pg = (_cpu_of(backend) - pg0) / answers
    wall = (time.perf_counter() - wall0) / answers

    with CaptureQueriesContext(connection) as captured:
        for _ in range(100):
            who.answer()
    statements = [
        q["sql"]
        for q in captured.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]
    kinds = Counter(_kind(sql) for sql in statements)

    profiler = cProfile.Profile(time.process_time)  # CPU, not time spent waiting
    profiler.enable()
    for _ in range(answers):
        who.answer()
    profiler.disable()
    stats = pstats.Stats(profiler)
    if os.environ.get("PROFILE_DUMP"):  # the whole profile, for a closer look
        stats.sort_stats(os.environ["PROFILE_DUMP"]).print_stats(60)
    profiled_total = sum(row[2] for row in stats.stats.values())  # all own times
    shares = {
        component: _inclusive(stats, suffix, name) / profiled_total
        for component, (suffix, name) in COMPONENTS.items()
    }
    # The hook runs inside the insert's transaction and the after-commit part inside its exit:
    # both are part of judgment_create's inclusive time; count them once, on their own.
    hook = shares["refit hook"] + shares["refit hook (after commit)"]
    shares["judgment insert (service)"] -= hook
    shares["refit hook"] = hook
    del shares["refit hook (after commit)"]
    shares["Django + DRF (middleware, routing, the rest)"] = 1.0 - sum(shares.values())
    breakdown = {k: round(v * cpu * 1000, 2) for k, v in shares.items()}
    breakdown["PostgreSQL (its backend process)"] = round(pg * 1000, 2)
    return {
        "answers": answers,
        "web_cpu_ms_per_answer": round(cpu * 1000, 2),
        "postgres_cpu_ms_per_answer": round(pg * 1000, 2),
        "total_cpu_ms_per_answer": round((cpu + pg) * 1000, 2),
        "wall_ms_per_answer": round(wall * 1000, 2),
        "queries_per_answer": round(len(statements) / 100, 2),
        "statements_per_answer": round(  # without the transaction's BEGIN and COMMIT
            sum(k not in ("BEGIN", "COMMIT") for k in map(_kind, statements)) / 100, 2
        ),
        "queries_per_answer_by_kind": {k: round(n / 100, 2) for k, n in kinds.most_common()},
        # the refit marker: one read while a refit is queued, a few writes when one is due
        "refit_hook_statements_per_answer": round(
            sum(n for k, n in kinds.items() if " learning_" in k) / 100, 2
        ),
        "cpu_ms_by_component": breakdown,
        "ceiling_answers_per_second_per_core": round(1 / (cpu + pg), 1),
    }


def print_profile(result: dict) -> None:
    print(
        f"one answer (POST ?next=1, in-process, one at a time): web {result['web_cpu_ms_per_answer']}"
        f" ms + PostgreSQL {result['postgres_cpu_ms_per_answer']} ms CPU = "
        f"{result['total_cpu_ms_per_answer']} ms; {result['queries_per_answer']} queries per "
        f"answer ({result['statements_per_answer']} besides BEGIN/COMMIT); ceiling {result['ceiling_answers_per_second_per_core']} answers/s per core"
    )
    for name, ms in result["cpu_ms_by_component"].items():
        print(f"  {name:48} {ms:7.2f} ms")
    print("  queries per answer:", result["queries_per_answer_by_kind"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=400)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--history", type=int, default=20_000, help="answers before the run")
    args = parser.parse_args(argv)
    stop_on_sigterm()
    ns = argparse.Namespace(
        keep=False, judgment_rate=50, annotators=2, items=5000, dim=50, history=20_000
    )
    quick_defaults(ns)
    ns.items, ns.dim, ns.history, ns.annotators = 5000, 50, args.history, 2
    stack = make_stack(ns)
    try:
        stack.start_database()
        stack.start_redis()
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from .seed import seed

        world = seed(annotators=2, items=ns.items, dim=ns.dim, history=ns.history)
        result = profile_answers(world.study_id, world.tokens[0], args.answers)
        print_profile(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
