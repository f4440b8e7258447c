"""Benchmark: how long a model audit takes, and how its memory grows with the number of items.

    .venv/bin/python benchmarks/audit.py [--quick] [--threads 2] [--scale 100000 200000]

1. **Adult, end to end** (the issue's target: 30,162 records at k = 10 in at most 10 s): a
   scratch SQLite database gets the Adult demo's record space (the training file through the
   demo's φ, 43 features), a study and a published metric of the demo's form,
   ``Σ = (I − P)`` with the demo's gender directions projected out (EXPLORE's own fit is left
   out so that the benchmark needs no refit; the audit's cost depends on Σ's rank, 39 here, not
   on its values). Both score files of ``experiments/adult/scores.py`` are audited through the
   service a request calls (``audit_create``: check the file's head, store it) and the one the
   worker runs (``audit_run``: read and check every row, search, figures, store), in this
   process. Printed per model: the figures,
   wall and CPU seconds of the run and of its parts.
2. **Scale**: the neighbour search on n random points in 40 dimensions (each size in a fresh
   process, its peak memory read from the kernel): for the largest sizes only the first
   ``--queries`` points' neighbours are searched (among all n), so memory is measured at full
   size and the full search's time is extrapolated linearly from the queries done; and the
   figures (violations, bootstrap intervals, the worst-first list) at 10⁶ items on a given
   neighbour graph.

``--quick`` runs 2,000 Adult records and tiny scales (a test runs it; no timing claims).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _django(scratch: Path, threads: int) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
            "DATABASE_URL": f"sqlite:///{scratch / 'bench.sqlite3'}",
            "MEDIA_ROOT": str(scratch / "media"),
            "VAR_DIR": str(scratch / "var"),
            "AUDIT_THREADS": str(threads),
            "AUDIT_MAX_ROWS": "2000000",
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def adult(n: int | None, threads: int, repeat: int = 1, check: bool = False) -> list[dict]:
    """The end-to-end Adult audits, each model ``repeat`` times; a list of result rows (and,
    with ``check``, a last row comparing the search with the brute force)."""
    scratch = Path(tempfile.mkdtemp(prefix="fm-audit-bench-"))
    _django(scratch, threads)
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.models import Study
    from experiments.adult.data import CATEGORICAL, LABEL, NUMERIC, adult_frame, gender_directions
    from experiments.adult.measures import project_out
    from experiments.adult.scores import adult_score_files
    from learning.audits import run, services
    from learning.core.audit import metric_factor
    from learning.versions import storage
    from spaces.records.create import record_space_create

    frame = adult_frame("train")
    if n is not None:
        frame = frame.iloc[:n].reset_index(drop=True)
    space = record_space_create(
        name="adult-bench",
        frame=frame,
        numeric=NUMERIC,
        categorical=CATEGORICAL,
        label_column=LABEL,
        key_column="key",
    )
    study = Study.objects.create(name="adult-bench", space=space)
    names = list(space.feature_map["feature_names"])
    vectors = np.asarray(space.load_matrix(), dtype=np.float64)
    directions, _ = gender_directions(vectors, names)
    sigma = project_out(np.eye(len(names)), directions)
    version = storage.metric_version_create(
        study=study, method="explore", sigma=sigma, label="gender-out", counts={}
    )
    storage.version_publish(  # never judged (made here): published with the reason recorded
        version_id=version.pk,
        user=None,
        reason="a benchmark's metric of the demo's form (EXPLORE's fit left out)",
        by="benchmarks/audit.py",
    )
    user = get_user_model().objects.create_user("bench", is_staff=True)
    rows = []
    files = adult_score_files(space=space, folder=scratch / "scores")
    for score_file, _ in [(f, r) for r in range(repeat) for f in files]:
        body = score_file.path.read_bytes()
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        audit = services.audit_create(
            user=user,
            study=study,
            upload=SimpleUploadedFile(score_file.path.name, body),
            name=score_file.name,
        )
        request = time.perf_counter() - wall
        run_cpu = time.process_time()
        assert run.audit_run(audit_id=audit.pk) == "done"
        run_cpu = time.process_time() - run_cpu
        audit.refresh_from_db()
        summary = audit.summary
        rows.append(
            {
                "model": score_file.name,
                "items": audit.item_count,
                "rank": summary["rank"],
                "rate": summary["sigma"]["violation_rate"],
                "euclidean": summary["euclidean"]["violation_rate"],
                "worst_differ_in_sex": sum(
                    "sex" in v.differing_fields for v in audit.violations.order_by("rank")[:20]
                ),
                "request": request,
                "run": summary["seconds"]["total"],
                "parts": summary["seconds"],
                "wall": time.perf_counter() - wall,
                "cpu": time.process_time() - cpu,
                "run_cpu": run_cpu,
                "search": summary["search"],
                "load": load,
            }
        )
    if check:
        factor = metric_factor(sigma)
        rows.append({"check": {"Σ": exact_check(vectors @ factor), "φ": exact_check(vectors)}})
    return rows


def brute_knn(x, k: int) -> tuple:
    """Each point's k nearest others by a brute force over every pair in float64 (the
    search's distance formula), ties by index: in each row the points at most as far as the
    k-th smallest distance, sorted by (distance, index)."""
    import numpy as np

    from learning.audits.search import pair_distances

    n = x.shape[0]
    everyone = np.arange(n)
    idx, dist = np.empty((n, k), dtype=np.int64), np.empty((n, k))
    for start in range(0, n, 16):
        q = everyone[start : start + 16]
        d = pair_distances(x, np.repeat(q, n), np.tile(everyone, q.size)).reshape(-1, n)
        d[np.arange(q.size), q] = np.inf
        kth = np.partition(d, k - 1, axis=1)[:, k - 1]
        for r, i in enumerate(q):
            near = np.flatnonzero(d[r] <= kth[r])
            near = near[np.lexsort((near, d[r, near]))][:k]
            idx[i], dist[i] = near, d[r, near]
    return idx, dist


def exact_check(x) -> dict:
    """``search.knn`` against :func:`brute_knn` at k = 10: items whose neighbours (in order)
    and distances (bit for bit) agree, and the brute force's CPU seconds."""
    import numpy as np

    from learning.audits import search

    idx, dist = search.knn(x, 10)
    cpu = time.process_time()
    ref_idx, ref_dist = brute_knn(np.ascontiguousarray(x, dtype=np.float64), 10)
    same = (idx == ref_idx).all(axis=1) & (dist == ref_dist).all(axis=1)
    return {"items": len(x), "same": int(same.sum()), "cpu": time.process_time() - cpu}


def _peak_mb() -> float:
    """This process's peak resident memory (MB): the kernel's VmHWM (getrusage's ru_maxrss
    would carry the parent's peak over into a child started by fork and exec)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale_one(n: int, threads: int, queries: int) -> dict:
    """The neighbour search of n random points (40-d, k = 10) in this process: all of it, or
    the first ``queries`` points' neighbours."""
    import numpy as np

    from learning.audits import search

    points = np.random.default_rng(0).normal(size=(n, 40))
    before = _peak_mb()
    done = min(n, queries)
    wall, cpu = time.perf_counter(), time.process_time()
    search.knn(points, 10, threads=threads, queries=done)
    return {
        "n": n,
        "queries": done,
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "peak_mb": _peak_mb(),
        "input_mb": before,
    }


def figures_at(n: int) -> dict:
    """The figures (no search) at n items on a random 10-neighbour graph."""
    import numpy as np

    from learning.core.audit import neighbour_figures, violating_pairs

    rng = np.random.default_rng(1)
    neighbours = rng.integers(0, n, size=(n, 10))
    distances = np.sort(rng.random((n, 10)), axis=1)
    scores = rng.random(n)
    wall, cpu = time.perf_counter(), time.process_time()
    neighbour_figures(neighbours, distances, scores, epsilon=0.5, lipschitz=1.0)
    pairs = violating_pairs(neighbours, distances, scores, epsilon=0.5, lipschitz=1.0)
    return {
        "n": n,
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "violating_pairs": len(pairs),
        "peak_mb": _peak_mb(),
    }


def _child(kind: str, n: int, threads: int, queries: int = 0) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            kind,
            str(n),
            "--threads",
            str(threads),
            "--queries",
            str(queries),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _interval(figure: dict) -> str:
    return (
        f"{100 * figure['estimate']:.1f} % ({100 * figure['low']:.1f}–{100 * figure['high']:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for tests")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--scale", type=int, nargs="*", default=[30_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=8_192, help="queries searched per size")
    parser.add_argument("--figures", type=int, default=1_000_000)
    parser.add_argument("--no-adult", action="store_true", help="only the scale part")
    parser.add_argument("--repeat", type=int, default=1, help="audits per Adult model")
    parser.add_argument(
        "--check", action="store_true", help="compare the Adult searches with a brute force"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, n = args.child[0], int(args.child[1])
        result = scale_one(n, args.threads, args.queries) if kind == "search" else figures_at(n)
        print(json.dumps(result))
        return 0
    if args.quick:
        args.scale, args.figures, args.queries = [3_000, 20_000], 20_000, 2_000
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f}; threads {args.threads}")
    if not args.no_adult:
        _adult_table(args)
    _scale_tables(args)
    return 0


def _adult_table(args) -> None:
    print("\n## Adult, end to end (k = 10)\n")
    print(
        "| model | items | violation rate under Σ | Euclidean | worst 20 differ in sex | "
        "load average | request (s) | run wall (s) | run CPU (s) | search, both (Σ / "
        "Euclidean) / figures / store (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = adult(2_000 if args.quick else None, args.threads, args.repeat, args.check)
    audits = [row for row in rows if "model" in row]
    for row in audits:
        p = row["parts"]
        print(
            f"| {row['model']} | {row['items']:,} | {_interval(row['rate'])} | "
            f"{_interval(row['euclidean'])} | {row['worst_differ_in_sex']} | {row['load']:.1f} | "
            f"{row['request']:.2f} | {row['run']:.2f} | {row['run_cpu']:.2f} | "
            f"{p['search']:.2f} ({p['search_sigma']:.2f} / {p['search_euclidean']:.2f}) / "
            f"{p['figures']:.2f} / {p['store']:.2f} |"
        )
    print(f"\nsearch back-end: {audits[-1]['search']}; Σ's rank {audits[-1]['rank']}")
    for model in dict.fromkeys(row["model"] for row in audits):
        runs = sorted(row["run"] for row in audits if row["model"] == model)
        print(
            f"{model}: run wall min {runs[0]:.2f} s, median {statistics.median(runs):.2f} s "
            f"over {len(runs)}"
        )
    for row in rows:
        for name, c in row.get("check", {}).items():
            print(
                f"exact check under {name}: {c['same']:,} of {c['items']:,} items have the brute "
                f"force's neighbours and distances (brute force {c['cpu']:.1f} s CPU)"
            )


def _scale_tables(args) -> None:
    print("\n## Neighbour search alone (40-d random points, k = 10, one process each)\n")
    print(
        "| items | queries searched | wall (s) | CPU (s) | whole search, CPU (s; extrapolated "
        "when partial) | peak memory (MB) | of which before the search (MB) |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in args.scale:
        r = _child("search", n, args.threads, args.queries)
        whole = r["cpu"] * n / r["queries"]
        print(
            f"| {n:,} | {r['queries']:,} | {r['wall']:.2f} | {r['cpu']:.2f} | {whole:,.0f} | "
            f"{r['peak_mb']:.0f} | {r['input_mb']:.0f} |"
        )
    r = _child("figures", args.figures, args.threads)
    print(
        f"\nfigures and the worst-first list at {r['n']:,} items (10 neighbours each, bootstrap "
        f"200): {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU, peak memory {r['peak_mb']:.0f} MB, "
        f"{r['violating_pairs']:,} violating pairs"
    )


if __name__ == "__main__":
    sys.exit(main())
