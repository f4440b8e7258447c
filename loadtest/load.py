"""Load test: 50 annotators against gunicorn + PostgreSQL + Redis + a Celery worker.

    .venv/bin/python -m loadtest.load [--quick] [--phases both|saturated|think] [--think-ms 2000]
                                      [--batch N] [--annotators 50] [--seconds 60] [--json FILE]

Starts the whole stack on 127.0.0.1 (scratch database ``fm_load_<pid>``, dropped at the end),
seeds a synthetic study and runs the virtual annotators (see loadtest/client.py) in two phases
on the same stack: **saturated** (no think time: answers/s the stack can take) and **think**
(each annotator looks at a pair ~``--think-ms`` before answering: the judgment POST's p95 at a
human pace). ``--batch N``: the annotators answer N pairs per request (the batch endpoint).
Then it waits until a metric version covers the last answer, checks the invariants
(loadtest/checks.py: lost and doubled answers, versions), and profiles single answers in-process
(loadtest/profile.py: CPU and queries per answer by component). Prints requests/s and
p50/p95/p99 per endpoint and CPU per answer by process. Exit status 1 when an invariant fails
(timing targets are reported, not enforced). ``--quick`` is the short form the test suite runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from . import checks
from .client import LoadConfig, run_annotators
from .cpu import CpuMeter
from .options import add_common_arguments, make_stack, quick_defaults
from .profile import print_profile, profile_answers
from .record import Record
from .stack import Stack, stop_on_sigterm

PHASES = ["saturated", "think"]
TARGET_JUDGMENTS_PER_SECOND = 300
TARGET_POST_P95_MS = 50


def prepare(stack: Stack, args: argparse.Namespace):
    """Database created, migrated and seeded; services started. Returns the seeded world."""
    began = time.perf_counter()
    stack.start_database()
    stack.start_redis()  # the seed's writes forget cached facts there (annotation/facts.py)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if getattr(args, "browser", 0):  # pages (login, labelling) need the static manifest
        call_command("collectstatic", interactive=False, verbosity=0)
    from .seed import seed

    world = seed(
        annotators=args.annotators,
        items=args.items,
        dim=args.dim,
        history=args.history,
        browser=getattr(args, "browser", 0),
    )
    from django.db import connections

    connections.close_all()
    seeded = time.perf_counter()
    stack.start_worker()
    stack.start_dashboards_worker()
    stack.start_audits_worker()
    stack.start_web()
    print(
        f"set up in {time.perf_counter() - began:.1f} s (database, migrations and seed "
        f"{seeded - began:.1f} s)",
        flush=True,
    )
    return world


def load_config(stack: Stack, args, study_id: int, **overrides) -> LoadConfig:
    overrides.setdefault("think", 0.0)
    return LoadConfig(
        host="127.0.0.1",
        port=stack.web_port,
        ports=tuple(stack.web_ports),
        study_id=study_id,
        seconds=args.seconds,
        warmup=args.warmup,
        lost_share=args.lost_share,
        next_in_answer=not args.two_requests,
        batch=getattr(args, "batch", 1),
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


def targets(summary: dict, batch: int = 1) -> dict:
    post = summary["endpoints"].get("POST batch" if batch > 1 else "POST judgment", {})
    return {
        "judgments_per_second": round(summary["judgments_per_second"], 1),
        "judgments_per_second_met": summary["judgments_per_second"] >= TARGET_JUDGMENTS_PER_SECOND,
        "post_p95_ms": round(post.get("p95_ms", float("nan")), 1),
        "post_p95_met": post.get("p95_ms", float("inf")) <= TARGET_POST_P95_MS,
    }


def merged(records: list[Record]) -> Record:
    """One record of every phase, for the invariants (acknowledged, sent, problems…)."""
    out = Record()
    for record in records:
        out.acknowledged.update(record.acknowledged)
        out.sent |= record.sent
        out.unacknowledged |= record.unacknowledged
        out.problems += record.problems
        out.done_answers += record.done_answers
        out.connection_errors.update(record.connection_errors)
        for endpoint, counts in record.statuses.items():
            out.statuses[endpoint].update(counts)
    return out


def cpu_per_answer(cores: dict[str, float], answers_per_second: float) -> dict[str, float]:
    """CPU milliseconds per stored answer of each process of the stack (cores / answers/s)."""
    if answers_per_second <= 0:
        return {}
    return {k: round(v * 1000 / answers_per_second, 2) for k, v in cores.items()}


def run_phase(stack: Stack, args, world, name: str) -> tuple[Record, dict]:
    think_ms = 0.0 if name == "saturated" else args.think_ms
    print(
        f"\n--- {name}: {args.annotators} annotators, think {think_ms:g} ms, "
        f"{'batches of ' + str(args.batch) if args.batch > 1 else 'one answer per request'}, "
        f"{args.warmup:g} s warm-up + {args.seconds:g} s",
        flush=True,
    )
    meter = CpuMeter(stack)
    meter.start()
    # A seed of its own per phase: the client_ids of one phase are never those of another.
    config = load_config(
        stack, args, world.study_id, think=think_ms / 1000.0, seed=PHASES.index(name) + 1
    )
    record = asyncio.run(run_annotators(config, world.tokens))
    cores = meter.stop()
    summary = record.summary()
    print_table(summary)
    per_answer = cpu_per_answer(cores, summary["judgments_per_second"])
    print("cores used during the phase:", cores)
    print("CPU ms per stored answer, by process:", per_answer)
    phase = {
        "phase": name,
        "think_ms": think_ms,
        "batch": args.batch,
        "summary": summary,
        "targets": targets(summary, batch=args.batch),
        "cores_used": cores,
        "cpu_ms_per_answer": per_answer,
        "load_average": os.getloadavg(),
    }
    print("targets:", phase["targets"], "load average:", phase["load_average"])
    return record, phase


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()
    if args.quick:
        quick_defaults(args)
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    names = PHASES if args.phases == "both" else [args.phases]
    stack = make_stack(args)
    try:
        world = prepare(stack, args)
        print(
            f"stack: {stack.base_url}, db {stack.db_name}, redis {stack.redis_url}, "
            f"{args.web_hosts} x gunicorn {args.web_workers} workers x {args.web_threads} "
            f"threads; JUDGMENT_RATE "
            f"{args.judgment_rate}/s per user; load average {os.getloadavg()}",
            flush=True,
        )
        records, phases = [], []
        for name in names:
            record, phase = run_phase(stack, args, world, name)
            records.append(record)
            phases.append(phase)
        record = merged(records)
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
        print("judgments:", judgment_facts)
        print(
            "versions:",
            version_facts,
            f"final version {recovery and round(recovery, 1)} s after the load stopped",
        )
        profile = None
        if args.profile_answers:  # after the checks: its answers are no load client's
            print("\n--- profile (in-process, one answer at a time)")
            profile = profile_answers(world.study_id, world.tokens[-1], args.profile_answers)
            print_profile(profile)
        result = {
            "mode": "quick" if args.quick else "full",
            "annotators": args.annotators,
            "web": f"{args.web_workers}x{args.web_threads}",
            "phases": phases,
            # the first phase's figures, as before the phases
            "think_ms": phases[0]["think_ms"],
            "summary": phases[0]["summary"],
            "targets": phases[0]["targets"],
            "cores_used": phases[0]["cores_used"],
            "load_average": os.getloadavg(),
            "judgments": judgment_facts,
            "versions": version_facts,
            "final_version_after_s": recovery,
            "profile": profile,
            "problems": problems,
        }
        print("\nsummary:")
        for phase in phases:
            post = phase["targets"]
            print(
                f"  {phase['phase']:9} answers/s {post['judgments_per_second']:7.1f}  "
                f"POST p95 {post['post_p95_ms']:7.1f} ms  CPU/answer "
                f"{sum(v for k, v in phase['cpu_ms_per_answer'].items() if k != 'others on the machine'):.1f} ms "
                f"(load average {phase['load_average'][0]:.1f})"
            )
        print(
            f"  lost {judgment_facts['lost']}, doubled {judgment_facts['doubles']}, "
            f"stored {judgment_facts['stored']} = acknowledged {judgment_facts['unique_acknowledged']}"
        )
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
