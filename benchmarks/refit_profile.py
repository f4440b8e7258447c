"""Benchmark: where a refit's CPU goes, in process, after a burst (the worker's second refit).

    .venv/bin/python benchmarks/refit_profile.py [--size 1000000] [--dim 50] [--top 25]

On a scratch PostgreSQL database (127.0.0.1, dropped afterwards) it builds the study of
``benchmarks/refit.py`` (``study_world.py``: N answers by 20 annotators on a 5,000 x d space,
debounce 0), fits it once, then twice more after a burst of 50 answers each (through
``judgment_create``, as the API does), all in this process as a worker would run them: the
second refit extends the inputs the first kept. The third is profiled with cProfile counting
CPU seconds (``time.process_time``: this process, every thread; the database server's own time
is not in it) — the machine is shared and wall times swing with its load. Printed: wall and
CPU of each refit, the profiled refit's CPU by stage (inputs, EXPLORE, FACE, evaluation), its
versions' own timings, the memory the worker keeps for the study
(``learning/refits/increments.py``) and the top functions by CPU.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from study_world import (  # noqa: E402
    ANNOTATORS,
    answers_send,
    judgments_load,
    postgres_run,
    response_pairs,
    scratch_environment,
    study_world,
)

BURST = 50
STAGES = {
    "inputs (fit_inputs)": "increments.py:.*(fit_inputs)",
    "EXPLORE fit (fit_explore)": "fitting.py:.*(fit_explore)",
    "FACE fit (fit_face)": "face_fits.py:.*(fit_face)",
    "evaluation (version_evaluate)": "checks.py:.*(version_evaluate)",
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _world(n: int, dim: int):
    """The study with n answers, and 2 bursts of new pairs (user, item a, item b, label)."""
    rng = np.random.default_rng(n)
    world = study_world(f"profile-{n}-{uuid.uuid4().hex[:6]}", dim, rng, debounce=0)
    pairs, labels = response_pairs(world, rng, n + 2 * BURST)
    ids, users = world.item_ids, world.users
    judgments_load(
        world.study.pk,
        {
            "item_a_id": ids[pairs[:n, 0]],
            "item_b_id": ids[pairs[:n, 1]],
            "annotator_id": np.array([u.pk for u in users])[np.arange(n) % ANNOTATORS],
            "label": labels[:n],
        },
    )
    later = [
        (users[i % ANNOTATORS], int(ids[a]), int(ids[b]), str(y))
        for i, ((a, b), y) in enumerate(zip(pairs[n:], labels[n:], strict=True))
    ]
    return world.study, [later[:BURST], later[BURST:]]


def _refit(study_id: int, profile: cProfile.Profile | None = None):
    from learning.refits import service

    wall, cpu = time.perf_counter(), _cpu()
    if profile is not None:
        profile.enable()
    report = service.refit_study(study_id=study_id)
    if profile is not None:
        profile.disable()
    if len(report.ready) != 2:
        raise SystemExit(f"the refit did not make two versions: {report}")
    return report, time.perf_counter() - wall, _cpu() - cpu


def _kept_mb() -> float:
    from learning.refits import increments

    total = 0
    for kept in increments._KEPT.values():
        arrays = [*kept.raw.rows.values(), kept.pair_keys, kept.annotators]
        arrays += [v for v in vars(kept.inputs.snapshot).values() if isinstance(v, np.ndarray)]
        arrays += [v for v in vars(kept.inputs.pairs).values() if isinstance(v, np.ndarray)]
        arrays += [kept.inputs.scatter.sums, kept.inputs.scatter.classes]
        total += sum(a.nbytes for a in arrays if a is not None)
    return total / 1e6


def _stage_cpu(stats: pstats.Stats, pattern: str) -> float:
    import re

    found = [v for k, v in stats.stats.items() if re.search(pattern, f"{k[0]}:{k[1]}({k[2]})")]
    return sum(v[3] for v in found)  # cumulative


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fm-refit-profile-"))
    name = f"fm_refit_profile_{os.getpid()}"
    postgres_run(f"CREATE DATABASE {name}")
    os.environ.update(scratch_environment(f"postgres://postgres@127.0.0.1:5432/{name}", scratch))
    print(f"load average at start {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    try:
        import django

        django.setup()
        from django.core.management import call_command

        from learning.models import MetricVersion

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        study, bursts = _world(args.size, args.dim)
        print(f"study of {args.size:,} answers built in {time.perf_counter() - started:.0f} s")
        _, wall, cpu = _refit(study.pk)
        print(f"first refit (cold): wall {wall:.2f} s, CPU {cpu:.2f} s")
        answers_send(study, bursts[0])
        _, wall, cpu = _refit(study.pk)
        print(
            f"refit after a burst (inputs built in this process): wall {wall:.2f} s, CPU {cpu:.2f} s"
        )
        answers_send(study, bursts[1])
        profile = cProfile.Profile(time.process_time)
        report, wall, cpu = _refit(study.pk, profile)
        print(f"refit after a burst (profiled): wall {wall:.2f} s, CPU {cpu:.2f} s")
        stats = pstats.Stats(profile)
        for stage, pattern in STAGES.items():
            print(f"  {stage:<32} CPU {_stage_cpu(stats, pattern):6.2f} s")
        for v in MetricVersion.objects.filter(pk__in=report.ready).order_by("method"):
            d = v.diagnostics
            print(
                f"  {v.method}: fit {v.fit_seconds:.2f} s wall, evaluation "
                f"{d.get('evaluation_seconds')} s, snapshot {d.get('snapshot_seconds')} s "
                f"({d.get('snapshot_read')}, arrays {d.get('snapshot_arrays')})"
                + (f", differences {d['differences']}" if "differences" in d else "")
            )
        print(f"memory kept for the study: {_kept_mb():.0f} MB")
        print(f"load average at the end {os.getloadavg()[0]:.1f}\n")
        stats.sort_stats("cumulative").print_stats(args.top)
    finally:
        from django.db import connections

        connections.close_all()
        postgres_run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
