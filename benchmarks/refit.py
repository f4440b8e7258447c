"""Benchmark: from the last answer of a burst to a ready, evaluated metric version.

    .venv/bin/python benchmarks/refit.py [--sizes 10000 100000] [--dim 50] [--redis URL]
                                         [--postgres] [--quick]

For each size N it builds a study on a scratch database (SQLite in a temp folder, or with
--postgres a scratch PostgreSQL database on 127.0.0.1 that is dropped afterwards) with a 5,000
x d space, a 10-test WEAT suite and N - 50 answers by 20 annotators (``study_world.py``; COPY
on PostgreSQL), fitted once (so the timed
refit also computes drift against a previous version). Then a burst of 50 answers goes through
``annotation.labelling.services.judgment_create`` (the path the API uses, which queues the refit after
each commit) and the clock runs from the commit of the last answer until both FACE and EXPLORE
versions covering it are ready *and evaluated* (WEAT suite and drift), as seen by polling the
database every 20 ms. Real Celery worker processes do the work, as deployed (``make run``,
``loadtest/stack.py``): one for refits and one for the dashboards' queue (``common/queues.py``;
--one-worker: a single worker for both, where a refit may wait behind a dashboard refresh),
over the embedded filesystem broker by default or Redis with --redis. The study's debounce
window (3 s) is included.

Then, once the workers are idle again (the dashboard refresh the burst queued is done), the tail
of a burst: TAIL = 9 more answers, one every TAIL_GAP seconds, fewer than the
study's ``version_min_new_answers`` (10, with ``version_min_minutes`` 5: the defaults). The
clock runs from the last of them to versions covering it: the debounce window after the study
goes quiet plus the fit, never the churn rule's minutes (before the quiet rule: 5 minutes).

--quick runs one tiny size with no timing claims (a test runs it to keep this script working).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from study_world import (  # noqa: E402
    ANNOTATORS,
    N_ITEMS,
    answers_send,
    judgments_load,
    postgres_run,
    response_pairs,
    scratch_environment,
    study_world,
)

BURST = 50
TAIL = 9  # < version_min_new_answers: the churn rule alone would keep them waiting
TAIL_GAP = 0.5  # seconds between the tail's answers (a person pressing keys)
DEBOUNCE = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--redis", default="", help="broker URL (default: embedded broker)")
    parser.add_argument("--postgres", action="store_true", help="scratch PostgreSQL database")
    parser.add_argument("--quick", action="store_true", help="one tiny size, for tests")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--one-worker", action="store_true", help="one worker for both queues")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.dim = [400], 10

    scratch = Path(tempfile.mkdtemp(prefix="fm-refit-bench-"))
    pg_name = f"fm_refit_bench_{os.getpid()}" if args.postgres else ""
    if pg_name:
        postgres_run("CREATE DATABASE " + pg_name)
        database_url = f"postgres://postgres@127.0.0.1:5432/{pg_name}"
    else:
        database_url = f"sqlite:///{scratch / 'bench.sqlite3'}"
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    env = scratch_environment(database_url, scratch) | {
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "DEBUG": "1",
        "REDIS_URL": args.redis,
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    workers = _start_workers(queue, scratch, args.one_worker)
    try:
        rows = [_measure(n, args.dim, args.timeout) for n in args.sizes]
    finally:
        for worker in workers:  # a warm shutdown finishes the task at hand
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:  # the figures are measured: do not lose them
                worker.kill()
                worker.wait()
        if pg_name:
            from django.db import connections

            connections.close_all()
            postgres_run("DROP DATABASE IF EXISTS " + pg_name)
    _print_table(rows, args, database_url)
    return 0


def _start_workers(queue: str, scratch: Path, one: bool) -> list[subprocess.Popen]:
    from common.queues import dashboard_queue_of, every_queue  # after main() set the environment
    from fairmetric_site.celery import worker_argv

    queues = [every_queue(queue)] if one else [queue, dashboard_queue_of(queue)]
    workers = []
    for number, name in enumerate(queues):
        log = open(scratch / f"worker-{number}.log", "w")  # noqa: SIM115 - as long as the worker
        workers.append(
            subprocess.Popen(
                worker_argv(name, f"{queue}-{number}@%h"),
                cwd=ROOT,
                env=dict(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    return workers


def _world(n: int, dim: int):
    """A study with N - BURST answers already fitted once, and the pairs of the burst."""
    import numpy as np

    from learning.models import WeatSuite, WeatTest

    rng = np.random.default_rng(n)
    world = study_world(f"n{n}-d{dim}-{uuid.uuid4().hex[:6]}", dim, rng, debounce=DEBOUNCE)
    study, item_ids, users = world.study, world.item_ids, world.users
    suite = WeatSuite.objects.create(name=f"suite {study.name}")
    suite.studies.add(study)
    WeatTest.objects.bulk_create(
        WeatTest(
            suite=suite,
            position=t,
            name=f"test {t}",
            kind="unfair",
            x_name="X",
            y_name="Y",
            a_name="A",
            b_name="B",
            **{
                key: [f"w{r}" for r in rng.choice(N_ITEMS, 8, replace=False)]
                for key in ("x_words", "y_words", "a_words", "b_words")
            },
        )
        for t in range(10)
    )
    pairs, labels = response_pairs(world, rng, n + TAIL)
    bulk = n - BURST
    user_ids = np.array([u.pk for u in users])
    judgments_load(
        study.pk,
        {
            "item_a_id": item_ids[pairs[:bulk, 0]],
            "item_b_id": item_ids[pairs[:bulk, 1]],
            "annotator_id": user_ids[np.arange(bulk) % ANNOTATORS],
            "label": labels[:bulk],
        },
    )
    burst = [
        (users[i % ANNOTATORS], int(item_ids[a]), int(item_ids[b]), str(y))
        for i, ((a, b), y) in enumerate(zip(pairs[bulk:], labels[bulk:], strict=True))
    ]
    return study, burst


def _evaluated(study, top: int) -> list | None:
    from learning.models import MetricVersion

    found = list(
        MetricVersion.objects.filter(study=study, judgment_watermark=top).exclude(status="fitting")
    )
    done = [v for v in found if v.status == "failed" or "evaluation_seconds" in v.diagnostics]
    return done if len(done) == 2 else None


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")


def _answer(study, answers, gap: float = 0.0) -> int:
    """Send ``answers`` through the API's service; the top judgment id after the last."""
    from annotation.models import PairJudgment

    answers_send(study, answers, gap)
    return PairJudgment.objects.filter(study=study).order_by("-id").first().pk


def _worker_idle(timeout: float) -> None:
    """Wait until the workers have run everything queued before now (a ping queued behind, on
    each queue)."""
    from celery import current_app
    from django.conf import settings

    from common.queues import dashboard_queue

    queues = (settings.CELERY_TASK_DEFAULT_QUEUE, dashboard_queue())
    for ping in [current_app.send_task("fairmetric.ping", queue=q) for q in queues]:
        ping.get(timeout=timeout)


def _measure(n: int, dim: int, timeout: float) -> dict:
    from django.db import transaction

    from annotation.models import PairJudgment
    from learning.refits.scheduling import refit_request

    study, burst = _world(n, dim)
    burst, tail = burst[:BURST], burst[BURST:]
    with transaction.atomic():
        refit_request(study_id=study.pk)
    first_top = PairJudgment.objects.filter(study=study).order_by("-id").first().pk
    _wait(lambda: _evaluated(study, first_top), timeout, f"the first fit at N={n}")
    top = _answer(study, burst)
    last_commit = time.perf_counter()
    versions = _wait(lambda: _evaluated(study, top), timeout, f"the versions at N={n}")
    total = time.perf_counter() - last_commit
    _worker_idle(timeout)  # the burst's dashboard refresh done: the burst is over
    top = _answer(study, tail, gap=TAIL_GAP)
    last_commit = time.perf_counter()
    tail_versions = _wait(lambda: _evaluated(study, top), timeout, f"the tail's versions at N={n}")
    tail_total = time.perf_counter() - last_commit
    # The work after the window: the snapshot, both fits and both evaluations (one after another).
    tail_work = sum(
        (v.fit_seconds or 0.0) + v.diagnostics.get("evaluation_seconds", 0.0) for v in tail_versions
    ) + max(v.diagnostics.get("snapshot_seconds", 0.0) for v in tail_versions)
    by_method = {v.method: v for v in versions}
    failed = [f"{v.method}: {v.error}" for v in versions if v.status == "failed"]
    if failed:
        raise SystemExit("a fit failed: " + "; ".join(failed))
    explore, face = by_method["explore"], by_method["face"]
    return {
        "n": n,
        "dim": dim,
        "total": total,
        "tail": tail_total,
        "tail_work": tail_work,
        "debounce": DEBOUNCE,
        "snapshot": explore.diagnostics.get("snapshot_seconds", 0.0),
        "explore_fit": explore.fit_seconds,
        "face_fit": face.fit_seconds,
        "evaluation": explore.diagnostics["evaluation_seconds"]
        + face.diagnostics["evaluation_seconds"],
        "iterations": explore.diagnostics.get("iterations"),
        "auc": explore.diagnostics.get("heldout_auc"),
    }


def _print_table(rows: list[dict], args, database_url: str) -> None:
    broker = args.redis or "embedded filesystem broker"
    database = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    print(
        f"Refit latency: last answer of a {BURST}-answer burst -> FACE and EXPLORE versions "
        f"ready and evaluated (10 WEAT tests + drift); {database}, {broker}, "
        + (
            "1 solo worker for both queues"
            if args.one_worker
            else "solo refit + dashboards workers"
        )
    )
    print(
        f"{'judgments':>10} {'d':>4} {'total s':>8} {'debounce':>8} {'snapshot':>8} "
        f"{'EXPLORE':>8} {'FACE':>7} {'eval':>6} {'iters':>6} {'AUC':>6} {'tail s':>7} "
        f"{'tail work':>9}"
    )
    for r in rows:
        auc = f"{r['auc']:.3f}" if r["auc"] is not None else "-"
        print(
            f"{r['n']:>10,} {r['dim']:>4} {r['total']:>8.2f} {r['debounce']:>8} "
            f"{r['snapshot']:>8.2f} {r['explore_fit']:>8.2f} {r['face_fit']:>7.2f} "
            f"{r['evaluation']:>6.2f} {r['iterations']!s:>6} {auc:>6} {r['tail']:>7.2f} "
            f"{r['tail_work']:>9.2f}"
        )
    print(
        "EXPLORE and FACE columns: fit seconds incl. the held-out validation fit; eval: WEAT "
        "suite + drift of both versions. Target: total <= 10 s at 100,000 judgments."
    )
    print(
        f"tail: the last of {TAIL} answers {TAIL_GAP} s apart after that version (fewer than "
        "the study's 10 new answers; churn rule's 5 minutes not passed) -> versions covering "
        "it; tail work: its snapshot, both fits and both evaluations. Target: tail <= "
        "debounce + work + 2 s (the rest: queueing, the 0.2 s margin, polling)."
    )


if __name__ == "__main__":
    sys.exit(main())
