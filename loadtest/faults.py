"""Fault run: the load test while the worker is killed, Redis restarts and the database drops
every connection — then check that nothing acknowledged is lost or doubled and the system
recovers by itself.

    .venv/bin/python -m loadtest.faults [--quick] [--annotators 50] [--seconds 60] [--json FILE]

Faults, at fixed times into the run (the full form does each twice, ``--quick`` once in ~20 s):

* ``kill-worker`` — wait until a fit is running (a ``fitting`` version row exists; if none shows
  within 10 s, while a refit holds the study's lease), SIGKILL the worker's whole process group,
  start a new worker a second later;
* ``restart-redis`` — stop the run's private redis-server (no persistence: queued refit messages
  and rate-limit buckets are lost), start it again on the same port two seconds later. Before the
  first one, two reviewers post ``AUDITS`` model audits while the audits' worker is paused
  (SIGSTOP, as if busy), so that their messages are in Redis when it stops; every one must reach
  ``done`` (the sweep sends them again, ``learning.audits.services.audits_resend``);
* ``terminate-db`` — ``pg_terminate_backend`` on every connection to the run's scratch database
  (gunicorn's and the worker's), nothing else on the server.

Half the annotators (``--browser-share``) log in through the login form and answer with
their browser session (cookie and CSRF header, as the labelling page does, and load the
labelling page now and then); the others use API tokens; one more client posts the login form
every second. Sessions live in the cache in front of the database, tokens do not: a Redis
restart must cost neither any 5xx.

The virtual annotators retry connection errors and 5xx with the same ``client_id`` (as the
labelling page does), so 5xx during a fault are expected and reported — except at a Redis
restart, where a 5xx is a problem; the invariants are checked as in the load test, plus:
the killed fit's ``fitting`` row is retired, no ``fitting`` row is left, and a final version of
each method covers the last answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time

from . import checks
from .audits import audit_setup, post_audit, scores_csv
from .browser import browser_login
from .client import run_annotators
from .load import client_problems, load_config, prepare, print_table
from .options import add_common_arguments, make_stack, quick_defaults
from .seed import LOAD_PASSWORD
from .stack import Stack, stop_on_sigterm

FULL_SCHEDULE = [
    (8, "kill-worker"),
    (18, "restart-redis"),
    (28, "terminate-db"),
    (38, "kill-worker"),
    (46, "restart-redis"),
    (54, "terminate-db"),
]
QUICK_SCHEDULE = [(2, "kill-worker"), (6, "restart-redis"), (10, "terminate-db")]
WINDOW = 10.0  # seconds after a fault in which failures are attributed to it
AUDITS = 4  # queued before the first Redis restart (two reviewers, two each: their limit)


class Injector(threading.Thread):
    def __init__(self, stack: Stack, study_id: int, schedule: list[tuple[float, str]]) -> None:
        super().__init__(daemon=True)
        self.stack, self.study_id, self.schedule = stack, study_id, schedule
        self.auditors: list[str] = []  # reviewers' tokens: audits queued before a Redis restart
        self.audits: list[int] = []
        self.events: list[dict] = []
        self.orphans_below = 0
        self.error: BaseException | None = None
        self.done = threading.Event()  # the schedule ran (or failed)
        # The thread outlives the schedule: the worker and redis-server it restarted die with
        # it (see stack._die_with_parent), so it ends only once the stack is stopped.
        self.release = threading.Event()

    def run(self) -> None:
        import psycopg

        start = time.perf_counter()
        self.conn = None
        try:
            self.conn = psycopg.connect(self.stack.pg_url, autocommit=True)
            for at, fault in self.schedule:
                time.sleep(max(0.0, at - (time.perf_counter() - start)))
                began = time.perf_counter()
                detail = getattr(self, fault.replace("-", "_"))()
                self.events.append(
                    {"fault": fault, "at": began, "t": round(began - start, 1), **detail}
                )
                print(f"  t={began - start:5.1f} s  {fault}: {detail}", flush=True)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc
        finally:
            if self.conn is not None:
                self.conn.close()
            self.done.set()
        self.release.wait()

    def _scalar(self, sql: str):
        params = {"study": self.study_id, "after": self.orphans_below}
        for attempt in range(20):
            try:
                return self.conn.execute(sql, params).fetchone()[0]
            except Exception:
                import psycopg

                time.sleep(0.2)
                self.conn = psycopg.connect(self.stack.pg_url, autocommit=True)
                if attempt == 19:
                    raise
        return None

    def kill_worker(self) -> dict:
        # Only fits started after the previous kill count: that one's orphan row stays
        # "fitting" until the next refit retires it.
        fitting_sql = (
            "SELECT count(*) FROM learning_metricversion WHERE study_id = %(study)s "
            "AND status = 'fitting' AND id > %(after)s"
        )
        lease_sql = (
            "SELECT count(*) FROM learning_refitstate WHERE study_id = %(study)s "
            "AND lease_token <> '' AND lease_until > now()"
        )
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline and not self._scalar(fitting_sql):
            time.sleep(0.005)
        during = "fit" if self._scalar(fitting_sql) else ""
        if not during:
            deadline = time.perf_counter() + 20
            while time.perf_counter() < deadline and not self._scalar(lease_sql):
                time.sleep(0.005)
            during = "refit (lease held)" if self._scalar(lease_sql) else "idle worker"
        self.stack.kill_worker()
        orphans = self._scalar(fitting_sql)  # rows the killed fit leaves behind
        self.orphans_below = self._scalar(
            "SELECT coalesce(max(id), 0) FROM learning_metricversion WHERE study_id = %(study)s"
        )
        time.sleep(1.0)
        self.stack.start_worker()
        return {"killed_during": during, "fitting_rows_orphaned": orphans}

    def restart_redis(self) -> dict:
        queued = self._queue_audits() if self.auditors and not self.audits else {}
        self.stack.restart_redis(down_seconds=2.0)
        if queued:
            self.stack.pause("audits", paused=False)
        return {"down_seconds": 2.0, **queued}

    def _queue_audits(self) -> dict:
        """Audits posted while the audits' worker is paused: their messages wait in Redis."""
        import redis

        from common.queues import audit_queue_of

        self.stack.pause("audits")
        file = scores_csv(200, seed=3)
        statuses = []
        for n in range(AUDITS):
            token = self.auditors[n % len(self.auditors)]
            status, body, _ = post_audit(self.stack.base_url, token, self.study_id, file, k=5)
            statuses.append(status)
            if status == 201:
                self.audits.append(body["id"])
        queue = audit_queue_of(self.stack.env()["CELERY_TASK_DEFAULT_QUEUE"])
        waiting = redis.Redis.from_url(self.stack.redis_url).llen(queue)
        return {"audits_posted": statuses, "audit_messages_in_redis": waiting}

    def terminate_db(self) -> dict:
        terminated = self._scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return {"connections_terminated": terminated}


def attribute_failures(failures: list[tuple[float, str]], events: list[dict]) -> dict:
    """Failures seen by clients, per fault (within WINDOW seconds after it) and outside any."""
    out: dict[str, int] = {}
    for at, what in failures:
        owner = "outside any fault window"
        for event in events:
            if event["at"] <= at <= event["at"] + WINDOW:
                owner = f"t={event['t']} {event['fault']}"
        key = f"{owner}: {what}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def _audits_done(ids: list[int], timeout: float) -> dict:
    """Wait until every audit of ``ids`` is done or failed (at most ``timeout`` s); by status."""
    from learning.models import ModelAudit

    deadline = time.perf_counter() + timeout
    while True:
        statuses = list(ModelAudit.objects.filter(pk__in=ids).values_list("status", flat=True))
        finished = all(s in ("done", "failed") for s in statuses)
        if finished or time.perf_counter() > deadline:
            return {s: statuses.count(s) for s in sorted(set(statuses))}
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    # Recovery times: the production defaults, unless shortened (the quick form does).
    parser.add_argument("--lease-seconds", type=int, default=30, help="LEARNING_LEASE_SECONDS")
    parser.add_argument("--sweep-seconds", type=int, default=60, help="LEARNING_SWEEP_SECONDS")
    parser.add_argument(
        "--lost-after-seconds", type=int, default=30, help="LEARNING_LOST_AFTER_SECONDS"
    )
    parser.add_argument(
        "--browser-share",
        type=float,
        default=0.5,
        help="share of the annotators that answer with a browser session (the rest: tokens)",
    )
    args = parser.parse_args(argv)
    stop_on_sigterm()
    schedule = FULL_SCHEDULE
    if args.quick:
        quick_defaults(args)
        args.seconds, args.history, args.dim = 14.0, 3000, 20
        args.lease_seconds, args.sweep_seconds, args.lost_after_seconds = 4, 2, 5
        schedule = QUICK_SCHEDULE
    else:
        args.recovery_timeout = max(args.recovery_timeout, 180.0)
    schedule = [(at, fault) for at, fault in schedule if at < args.seconds]
    args.warmup = 0.0
    args.browser = min(args.annotators, round(args.annotators * args.browser_share))
    stack = make_stack(
        args,
        lease_seconds=args.lease_seconds,
        sweep_seconds=args.sweep_seconds,
        lost_after_seconds=args.lost_after_seconds,
    )
    problems: list[str] = []
    injector = None
    try:
        world = prepare(stack, args)
        print(
            f"stack: {stack.base_url}, db {stack.db_name}, redis {stack.redis_url}; "
            f"{args.annotators} annotators for {args.seconds:g} s; faults: {schedule}; "
            f"lease {args.lease_seconds} s, sweep {args.sweep_seconds} s, lost after "
            f"{args.lost_after_seconds} s",
            flush=True,
        )
        sessions = [browser_login(stack.base_url, u, LOAD_PASSWORD) for u in world.browser_users]
        credentials = world.tokens[: len(world.tokens) - len(sessions)] + sessions
        print(
            f"{len(credentials) - len(sessions)} annotators with API tokens, {len(sessions)} "
            f"with browser sessions (logged in through the form), one login-form prober",
            flush=True,
        )
        probe = (world.browser_users[0], LOAD_PASSWORD) if world.browser_users else None
        injector = Injector(stack, world.study_id, schedule)
        injector.auditors = audit_setup(world.study_id, 2)
        injector.start()
        config = load_config(stack, args, world.study_id, give_up_after=120.0, login_probe=probe)
        record = asyncio.run(run_annotators(config, credentials))
        injector.done.wait(timeout=60)
        summary = record.summary()
        print_table(summary)
        if injector.error is not None or not injector.done.is_set():
            problems.append(f"fault injection failed: {injector.error!r}")
        recovery, state = checks.wait_for_final_versions(world.study_id, args.recovery_timeout)
        judgment_facts, judgment_problems = checks.judgment_checks(record, world.study_id)
        version_facts, version_problems = checks.version_checks(world.study_id)
        left = checks.fitting_left(world.study_id)
        audits = _audits_done(injector.audits, args.recovery_timeout)
        if audits.get("done", 0) != len(injector.audits) or not injector.audits:
            problems.append(f"audits queued before a Redis restart, by status: {audits}")
        problems += client_problems(record, allow_5xx=True) + judgment_problems
        problems += version_problems
        if record.unacknowledged:
            problems.append(
                f"{len(record.unacknowledged)} answers never acknowledged (retries gave up)"
            )
        if recovery is None:
            problems.append(
                f"no version covers the last answer {args.recovery_timeout:.0f} s "
                f"after the load stopped: {state}"
            )
        if left:
            problems.append(f"{left} 'fitting' version rows left behind")
        orphaned = sum(e.get("fitting_rows_orphaned", 0) for e in injector.events)
        if version_facts["interrupted_retired"] < orphaned:
            problems.append(
                f"killed fits left {orphaned} 'fitting' rows, only "
                f"{version_facts['interrupted_retired']} were retired"
            )
        dead = stack.check_alive()
        if dead:
            problems.append(f"processes died: {dead}")
        failures = attribute_failures(record.failures_at, injector.events)
        # A Redis restart must cost no 5xx (sessions and limits go on from the database);
        # client timeouts are reported with the rest (a loaded machine has them in every window).
        at_redis = {
            k: n for k, n in failures.items() if "restart-redis" in k and k[-3:].startswith("5")
        }
        if at_redis:
            problems.append(f"5xx while Redis restarted (must be none): {at_redis}")
        result = {
            "mode": "quick" if args.quick else "full",
            "annotators": args.annotators,
            "browser_sessions": len(sessions),
            "faults": [{k: v for k, v in e.items() if k != "at"} for e in injector.events],
            "summary": summary,
            "failures_seen_by_clients": failures,
            "judgments": judgment_facts,
            "versions": version_facts,
            "final_version_after_s": recovery,
            "fitting_left": left,
            "audits": audits,
            "problems": problems,
        }
        print("client-side failures (all retried):", json.dumps(failures, indent=2))
        print("judgments:", judgment_facts)
        print("audits queued before the Redis restart, by status:", audits)
        print(
            "versions:",
            version_facts,
            f"final version {recovery and round(recovery, 1)} s after the load stopped",
        )
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))
    finally:
        stack.stop()
        if injector is not None:
            injector.release.set()
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("OK: nothing acknowledged lost, nothing doubled, no duplicate versions, recovered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
