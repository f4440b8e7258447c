"""Benchmark: how each stage of a refit grows with the study — time and peak memory.

    .venv/bin/python benchmarks/growth.py [--sizes 10000 100000 1000000] [--postgres]
                                          [--core 10000 100000 1000000 10000000] [--dim 50]
                                          [--core-fit 1000000 3000000] [--quick]

The app part: for each size N, a study on a scratch database (SQLite in a temp folder, or with
--postgres a scratch PostgreSQL database on 127.0.0.1, dropped afterwards) with a 5,000 x d
space and N answers by 20 annotators (N / 2 pairs, each answered by two of them, labels from a
hidden low-rank metric with 15 % noise), loaded with COPY on PostgreSQL. Then, in this process,
each stage of a refit as the worker runs it: the snapshot (``judgment_snapshot`` +
``pair_data``), the EXPLORE fit (``fit_explore``: penalty path, validation, final fit), the FACE
fit, the whole refit through ``learning.refits.service.refit_study`` (both, stored and
evaluated), the study dashboard's figures and the agreement alone (the worker's dashboards
task), and streaming the judgments CSV export; then 50 new answers through the labelling service
and the refit and figures that follow them, from what the first ones kept (the worker's usual
case: the inputs and pair differences extended, the fits warm-started, the tallies extended).

The core part (--core): EXPLORE's loss/gradient pass (``_pairloss.loglik_and_gradient``) over
n pairs at d = 50, chunked, with z built from the item matrix and two index vectors
(``PairDifferences``) and over a memory-mapped float32 z written to the scratch folder; up to
10⁶ pairs also the whole-array pass the solver runs today (z in memory).

Peak memory: the process's peak resident set during the stage above its resident set when the
stage began (Linux ``/proc/self/clear_refs`` resets the peak), in MB; for the core passes also
the peak of numpy's and Python's own allocations (``tracemalloc``), which leaves out the pages
of a memory-mapped file (the kernel's page cache, reclaimable). --quick: one tiny size of each,
no timing claims (tests/core/test_benchmark_quick.py keeps this script working).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import numpy as np

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

BURST = 50  # new answers after the first refit


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def measured(fn, *, allocations: bool = False) -> tuple:
    """``fn()``'s result, seconds, peak RSS above the start (MB), with ``allocations`` the peak
    of tracemalloc's allocations (MB), and the process's peak RSS during the call (MB)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # peak RSS := current RSS
    base = _status_kb("VmRSS") or 0
    if allocations:
        tracemalloc.start()
    started = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - started
    traced = None
    if allocations:
        traced = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    top = _status_kb("VmHWM") or base
    return result, seconds, max(0, top - base) / 1e3, traced, top / 1e3


# --- the app part ---------------------------------------------------------------------------


def _setup(postgres: bool, scratch: Path) -> str:
    name = f"fm_growth_bench_{os.getpid()}" if postgres else ""
    if name:
        postgres_run(f"CREATE DATABASE {name}")
    url = f"postgres://postgres@127.0.0.1:5432/{name}" if name else ""
    os.environ.update(scratch_environment(url or f"sqlite:///{scratch / 'bench.sqlite3'}", scratch))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return name


def _world(n: int, dim: int):
    """A study with n answers (n / 2 pairs, two annotators each); its id, and a burst of
    ``BURST`` later answers (user, item a id, item b id, label), drawn as the refit benchmarks draw
    theirs (``study_world.response_pairs``)."""
    rng = np.random.default_rng(n)
    world = study_world(f"growth-{n}-{uuid.uuid4().hex[:6]}", dim, rng, debounce=0)
    matrix, item_ids = world.matrix, world.item_ids
    pairs = n // 2
    codes = rng.choice(N_ITEMS * N_ITEMS, size=int(pairs * 2.2) + 10, replace=False)
    a, b = codes // N_ITEMS, codes % N_ITEMS
    keep = a < b
    a, b = a[keep][:pairs], b[keep][:pairs]
    hidden = rng.normal(size=(dim, 5))
    distance = np.sum(((matrix[a] - matrix[b]) @ hidden) ** 2, axis=1)
    truth = distance < np.median(distance)  # comparable
    first = rng.integers(0, ANNOTATORS, size=pairs)
    second = (first + rng.integers(1, ANNOTATORS, size=pairs)) % ANNOTATORS
    who = np.stack([first, second], axis=1).ravel()
    comparable = np.repeat(truth, 2) ^ (rng.random(2 * pairs) < 0.15)
    label = np.where(comparable, "comparable", "incomparable")
    user_ids = np.array([u.pk for u in world.users])
    columns = {
        "item_a_id": item_ids[np.repeat(a, 2)],
        "item_b_id": item_ids[np.repeat(b, 2)],
        "annotator_id": user_ids[who],
        "label": label,
        "elapsed_ms": rng.integers(300, 6000, size=2 * pairs),
    }
    judgments_load(world.study.pk, columns)
    extra, labels = response_pairs(world, rng, BURST)
    burst = [
        (world.users[i % ANNOTATORS], int(item_ids[a]), int(item_ids[b]), str(y))
        for i, ((a, b), y) in enumerate(zip(extra, labels, strict=True))
    ]
    return world.study.pk, burst


def _app_stages(study_id: int, burst: list) -> list[tuple[str, float, float]]:
    from annotation.models import Study
    from learning.dashboards import figures, tallies
    from learning.exports import formats
    from learning.models import StudyLearningSettings
    from learning.refits import face_fits, fitting, pairs, service, snapshots

    study = Study.objects.select_related("space").get(pk=study_id)
    learning = StudyLearningSettings.objects.get(study_id=study_id)
    marks = snapshots.study_data_marks(study_id=study_id)
    rows = []

    def snapshot():
        shot = snapshots.judgment_snapshot(
            study_id=study_id, watermark=marks.judgment_watermark, excluded_annotators=[]
        )
        return pairs.pair_data(
            shot, policy=learning.repeat_policy, validation_share=learning.validation_share
        )

    observations, seconds, peak, _, _ = measured(snapshot)
    rows.append(("snapshot (judgment_snapshot + pair_data)", seconds, peak))
    groups = snapshots.GroupSnapshot(rows=[], creators=0)
    read = study.space.vectors
    stages = [
        (
            "EXPLORE fit (fit_explore)",
            lambda: fitting.fit_explore(observations, read, max_eigenvalue=None),
        ),
        (
            "FACE fit (fit_face, pairs as groups)",
            lambda: face_fits.fit_face(observations, groups, read, k=None, use_pairs=True),
        ),
        ("whole refit (service: both, stored, evaluated)", lambda: _refit(service, study_id)),
        ("dashboard figures (worker task)", lambda: figures.study_dashboard(study)),
        ("  of which agreement (κ, α, majority)", lambda: tallies.study_agreement(study_id)),
        ("judgments.csv export, streamed", lambda: _export(formats, study)),
    ]
    for name, stage in stages:
        _, seconds, peak, _, _ = measured(stage)
        rows.append((name, seconds, peak))
    answers_send(study, burst)
    for name, stage in [
        (
            f"refit after {len(burst)} new answers (kept inputs, warm)",
            lambda: _refit(service, study_id),
        ),
        ("dashboard figures after them (tallies extended)", lambda: figures.study_dashboard(study)),
    ]:
        _, seconds, peak, _, _ = measured(stage)
        rows.append((name, seconds, peak))
    return rows


def _refit(service, study_id: int) -> None:
    report = service.refit_study(study_id=study_id)
    if len(report.ready) != 2:
        raise SystemExit(f"the refit did not make two versions: {report}")


def _export(formats, study) -> int:
    lines = formats.stream_csv(formats.judgment_rows(study=study), formats.JUDGMENT_FIELDS)
    return sum(len(line) for line in lines)


# --- the core part --------------------------------------------------------------------------


def _core_rows(n: int, dim: int, scratch: Path) -> list[tuple]:
    from learning.core._pairloss import (
        PairBlocks,
        PairDifferences,
        loglik_and_gradient,
        quad_forms,
        weighted_gram,
    )

    rng = np.random.default_rng(1)
    items = 20_000
    x = rng.normal(size=(items, dim)).astype(np.float32)
    a = rng.integers(0, items, size=n).astype(np.int32)
    b = ((a + rng.integers(1, items, size=n)) % items).astype(np.int32)
    y = (rng.random(n) < 0.5).astype(np.float64)
    sigma = np.eye(dim) / dim
    rows = []
    source = PairDifferences(x, a, b)
    _, seconds, peak, traced, top = measured(
        lambda: loglik_and_gradient(source, sigma, y), allocations=True
    )
    rows.append(("chunked pass, z from pair indices", seconds, peak, traced, top))

    path = scratch / f"z-{n}.npy"
    z_file = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, dim))
    for start in range(0, n, 1 << 18):
        z_file[start : start + (1 << 18)] = source[start : start + (1 << 18)]
    z_file.flush()
    del z_file
    mapped = np.load(path, mmap_mode="r")
    _, seconds, peak, traced, top = measured(
        lambda: loglik_and_gradient(mapped, sigma, y), allocations=True
    )
    rows.append(("chunked pass, memory-mapped z (float32)", seconds, peak, traced, top))
    path.unlink()  # the mapping stays readable until dropped (POSIX)

    if n <= 1_000_000:
        z = source[:]
        order = PairBlocks.order(y)
        z_sorted, blocks = z[order], PairBlocks.from_sorted(y[order])

        def whole():
            ll, slope = blocks.loglik_and_slope(quad_forms(z_sorted, sigma))
            return ll, weighted_gram(z_sorted, slope, blocks) / n

        _, seconds, peak, traced, top = measured(whole, allocations=True)
        rows.append(("whole-array pass (the solver's, z in memory)", seconds, peak, traced, top))
    return rows


def _core_fit_rows(n: int, dim: int) -> list[tuple]:
    """A whole EXPLORE fit (penalty search, held-out figures, final fit) over n pairs given as
    ``PairDifferences`` (built chunk by chunk from the item matrix); labels from a rank-5
    metric. Up to 10⁶ pairs also the same fit on the (n, d) array of differences."""
    from learning.core._pairloss import PairDifferences, quad_forms
    from learning.core.explore import EXPLORE

    rng = np.random.default_rng(2)
    x = rng.normal(scale=0.5, size=(20_000, dim))
    a = rng.integers(0, 20_000, size=n).astype(np.int32)
    b = ((a + rng.integers(1, 20_000, size=n)) % 20_000).astype(np.int32)
    basis = np.linalg.qr(rng.normal(size=(dim, 5)))[0]
    pairs = PairDifferences(x, a, b)
    p = 2.0 / (1.0 + np.exp(quad_forms(pairs, 4.0 * basis @ basis.T)))
    y = (rng.random(n) < p).astype(np.float64)
    cases = [("EXPLORE fit, pairs from indices (PairDifferences)", lambda: pairs)]
    if n <= 1_000_000:
        cases.append(("EXPLORE fit, (n, d) array of differences", lambda: pairs[0:n]))
    rows = []
    for name, make in cases:
        cpu = time.process_time()
        model, seconds, peak, _, top = measured(lambda m=make: EXPLORE().fit_differences(m(), y))
        cpu = time.process_time() - cpu
        rows.append((name, seconds, cpu, peak, top, model.heldout_loglik_, model.n_iter_))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--core", type=int, nargs="*", default=[10_000, 100_000, 10**6, 10**7])
    parser.add_argument("--core-fit", type=int, nargs="*", default=[])
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--postgres", action="store_true", help="scratch PostgreSQL database")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for tests")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.core, args.core_fit, args.dim = [600], [5000], [5000], 8
    scratch = Path(tempfile.mkdtemp(prefix="fm-growth-"))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average at start {load:.1f}, {os.cpu_count()} CPUs, d = {args.dim}")
    if args.sizes:
        name = _setup(args.postgres, scratch)
        try:
            from django.db import connection

            print(f"\n## A refit's stages ({connection.vendor})\n")
            print("| judgments | stage | wall (s) | peak RSS above start (MB) |")
            print("|---:|---|---:|---:|")
            for n in args.sizes:
                (study_id, burst), built, *_ = measured(lambda n=n: _world(n, args.dim))
                print(f"| {n:,} | (building the study: {built:.0f} s) | | |", flush=True)
                for stage, seconds, peak in _app_stages(study_id, burst):
                    print(f"| {n:,} | {stage} | {seconds:.2f} | {peak:.0f} |", flush=True)
        finally:
            if name:
                from django.db import connections

                connections.close_all()
                postgres_run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    if args.core:
        print(f"\n## EXPLORE's loss/gradient pass (d = {args.dim})\n")
        print(
            "| pairs | pass | wall (s) | peak RSS above start (MB) | peak allocations (MB) "
            "| process peak RSS (MB) |"
        )
        print("|---:|---|---:|---:|---:|---:|")
        for n in args.core:
            for stage, seconds, peak, traced, top in _core_rows(n, args.dim, scratch):
                cells = f"{seconds:.2f} | {peak:.0f} | {traced:.0f} | {top:.0f}"
                print(f"| {n:,} | {stage} | {cells} |", flush=True)
    if args.core_fit:
        print(f"\n## A whole EXPLORE fit (d = {args.dim})\n")
        head = (
            "| pairs | fit | wall (s) | CPU (s) | peak RSS above start (MB) | process peak RSS (MB)"
        )
        print(head + " | held-out loglik | iterations |\n|---:|---|---:|---:|---:|---:|---:|---:|")
        for n in args.core_fit:
            for name, seconds, cpu, peak, top, heldout, iters in _core_fit_rows(n, args.dim):
                cells = f"{seconds:.1f} | {cpu:.1f} | {peak:.0f} | {top:.0f} | {heldout:.6f}"
                print(f"| {n:,} | {name} | {cells} | {iters} |", flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
