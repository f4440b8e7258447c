"""Load test: 50 annotators for 60 s against gunicorn + PostgreSQL + Redis + a Celery worker.

    .venv/bin/python -m loadtest.load [--quick] [--annotators 50] [--seconds 60] [--json FILE]

Starts the whole stack on 127.0.0.1 (scratch database ``fm_load_<pid>``, dropped at the end),
seeds a synthetic study, runs the virtual annotators (see loadtest/client.py), waits until a
metric version covers the last answer, then prints requests/s and p50/p95/p99 per endpoint and
checks the invariants (loadtest/checks.py). Exit status 1 when an invariant fails (timing
targets are reported, not enforced). ``--quick`` is the short form the test suite runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from .client import LoadConfig, Record, run_annotators
from .stack import CpuMeter, Stack, stop_on_sigterm

TARGET_JUDGMENTS_PER_SECOND = 300
TARGET_POST_P95_MS = 50


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="the short form (tests)")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=3.0, help="untimed load before")
    parser.add_argument(
        "--lost-share",
        type=float,
        default=0.1,
        help="share of answers whose response is 'lost' and retried",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="mean time an annotator looks at a pair (0: answer at once)",
    )
    parser.add_argument(
        "--two-requests",
        action="store_true",
        help="GET next-pair before every POST (the pattern before ?next=1)",
    )
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--history", type=int, default=20_000, help="answers before the run")
    parser.add_argument("--web-workers", type=int, default=3)
    parser.add_argument("--web-threads", type=int, default=4)
    parser.add_argument(
        "--judgment-rate",
        type=int,
        default=50,
        help="JUDGMENT_RATE of the run: POSTs/s per user (the throttle stays on)",
    )
    parser.add_argument("--recovery-timeout", type=float, default=120.0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs)")


def quick_defaults(args: argparse.Namespace) -> None:
    args.annotators, args.seconds, args.warmup = 5, 5.0, 0.0
    args.items, args.dim, args.history = 500, 10, 500
    args.web_workers, args.web_threads = 2, 2
    args.recovery_timeout = 60.0


def make_stack(args: argparse.Namespace, *, lost_after_seconds: int = 30, **kwargs) -> Stack:
    # The judgment throttle stays active, at a rate above one load annotator's pace (a person
    # answers about once a second; a virtual annotator without think time, several times).
    throttle = {
        "JUDGMENT_RATE": str(args.judgment_rate),
        "JUDGMENT_BURST": str(max(60, 2 * args.judgment_rate)),
        "LEARNING_LOST_AFTER_SECONDS": str(lost_after_seconds),
    }
    return Stack(
        web_workers=args.web_workers,
        web_threads=args.web_threads,
        keep=args.keep,
        extra_env=throttle,
        **kwargs,
    )


def prepare(stack: Stack, args: argparse.Namespace):
    """Database created, migrated and seeded; services started. Returns the seeded world."""
    began = time.perf_counter()
    stack.start_database()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from .seed import seed

    world = seed(annotators=args.annotators, items=args.items, dim=args.dim, history=args.history)
    from django.db import connections

    connections.close_all()
    seeded = time.perf_counter()
    stack.start_services()
    print(
        f"set up in {time.perf_counter() - began:.1f} s (database, migrations and seed "
        f"{seeded - began:.1f} s)",
        flush=True,
    )
    return world


def load_config(stack: Stack, args, study_id: int, **overrides) -> LoadConfig:
    return LoadConfig(
        host="127.0.0.1",
        port=stack.web_port,
        study_id=study_id,
        seconds=args.seconds,
        warmup=args.warmup,
        lost_share=args.lost_share,
        think=args.think_ms / 1000.0,
        next_in_answer=not args.two_requests,
        **overrides,
    )


def print_table(summary: dict) -> None:
    print(
        f"{'endpoint':24} {'requests':>8} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p99 ms':>8} {'max ms':>8}  statuses"
    )
    for name, e in summary["endpoints"].items():
        print(
            f"{name:24} {e['requests']:8d} {e['per_second']:8.1f} {e['p50_ms']:8.1f} "
            f"{e['p95_ms']:8.1f} {e['p99_ms']:8.1f} {e['max_ms']:8.1f}  {e['statuses']}"
        )
    print(f"{'all':24} {summary['requests']:8d} {summary['requests_per_second']:8.1f}")
    print(
        f"judgments stored per second (201s): {summary['judgments_per_second']:.1f} "
        f"over {summary['seconds']:.1f} s; simulated lost responses retried: "
        f"{summary['lost_responses_simulated']}; connection errors: "
        f"{summary['connection_errors'] or 0}"
    )


def client_problems(record: Record, *, allow_5xx: bool) -> list[str]:
    problems = list(record.problems[:10])
    if not allow_5xx and record.count_5xx():
        problems.append(f"{record.count_5xx()} server errors (5xx)")
    odd = record.unexpected_statuses()
    if odd:
        problems.append(f"unexpected statuses: {odd}")
    if record.done_answers:
        problems.append(f"{record.done_answers} annotators ran out of pairs")
    return problems


def targets(summary: dict) -> dict:
    post = summary["endpoints"].get("POST judgment", {})
    return {
        "judgments_per_second": round(summary["judgments_per_second"], 1),
        "judgments_per_second_met": summary["judgments_per_second"] >= TARGET_JUDGMENTS_PER_SECOND,
        "post_p95_ms": round(post.get("p95_ms", float("nan")), 1),
        "post_p95_met": post.get("p95_ms", float("inf")) <= TARGET_POST_P95_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()
    if args.quick:
        quick_defaults(args)
    stack = make_stack(args)
    try:
        world = prepare(stack, args)
        print(
            f"stack: {stack.base_url}, db {stack.db_name}, redis {stack.redis_url}, gunicorn "
            f"{args.web_workers} workers x {args.web_threads} threads; {args.annotators} "
            f"annotators (think {args.think_ms:g} ms), {args.warmup:g} s warm-up + "
            f"{args.seconds:g} s; JUDGMENT_RATE "
            f"{args.judgment_rate}/s per user",
            flush=True,
        )
        meter = CpuMeter(stack)
        meter.start()
        record = asyncio.run(run_annotators(load_config(stack, args, world.study_id), world.tokens))
        cores = meter.stop()
        summary = record.summary()
        print_table(summary)
        print("cores used during the run:", cores)
        from . import checks

        recovery, state = checks.wait_for_final_versions(world.study_id, args.recovery_timeout)
        judgment_facts, problems = checks.judgment_checks(record, world.study_id)
        version_facts, version_problems = checks.version_checks(world.study_id)
        problems = client_problems(record, allow_5xx=False) + problems + version_problems
        if record.connection_errors:
            problems.append(f"connection errors: {dict(record.connection_errors)}")
        if recovery is None:
            problems.append(
                f"no version covers the last answer after {args.recovery_timeout:.0f} s: {state}"
            )
        dead = stack.check_alive()
        if dead:
            problems.append(f"processes died: {dead}")
        result = {
            "mode": "quick" if args.quick else "full",
            "annotators": args.annotators,
            "think_ms": args.think_ms,
            "web": f"{args.web_workers}x{args.web_threads}",
            "summary": summary,
            "targets": targets(summary),
            "cores_used": cores,
            "load_average": os.getloadavg(),
            "judgments": judgment_facts,
            "versions": version_facts,
            "final_version_after_s": recovery,
            "problems": problems,
        }
        print("judgments:", judgment_facts)
        print(
            "versions:",
            version_facts,
            f"final version {recovery and round(recovery, 1)} s after the load stopped",
        )
        print("targets:", result["targets"])
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))
    finally:
        stack.stop()
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("OK: every acknowledged answer stored once, no 5xx, no duplicate versions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
