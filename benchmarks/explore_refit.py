"""Benchmark: EXPLORE's part of a warm refit after a burst of new answers, with and without the
pair differences kept from the last refit (issue 30).

    .venv/bin/python benchmarks/explore_refit.py [--sizes 100000 1000000] [--dim 50] [--new 50]
                                                 [--quick]

For each size N: a study's pairs as the worker sees them (``learning.refits.pairs.PairData``:
N distinct pairs of a 5,000 × d space answered once each by 20 annotators, labels from a
rank-5 metric, the study's 20 % hash split), the prior a FACE-like metric ``I - VVᵀ`` (rank-3
V) that moves a little at each refit, as the study's FACE version does, with a per-fold prior;
the reliability EM on (the app's defaults). First the fit on N - NEW answers (cold), then the
refit on all N answers warm-started from it, three ways, each timed in wall and CPU seconds
(``time.process_time``: this process, BLAS threads included):

* **kept**: the differences kept in the worker's memory and extended by the NEW pairs
  (``learning/refits/cache.py: differences_for``), as the worker now refits;
* **rebuilt**: the same warm refit with the kept differences dropped first (everything n × d
  built again: the refits before this work);
* **cold**: no warm start, nothing kept.

It prints each one's held-out log-likelihood and log-likelihood and their gaps to the cold fit.
``--quick``: one tiny size, no timing claims (tests/core/test_benchmark_quick.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
N_ITEMS = 5000
ANNOTATORS = 20


class _Space:
    """What ``differences_for`` keys the kept differences on: a space's primary key, checksum."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix, self.pk, self.sha256 = matrix, 1, "benchmark"

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        return self.matrix[rows]


def _study(n: int, dim: int, items: int):
    from learning.refits import pairs as pair_obs

    rng = np.random.default_rng(n)
    matrix = rng.normal(scale=0.5, size=(items, dim))
    pairs = np.unique(np.sort(rng.integers(0, items, size=(int(n * 1.2) + 100, 2)), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = pairs[rng.permutation(len(pairs))[:n]]
    basis = np.linalg.qr(rng.normal(size=(dim, 5)))[0]
    z = matrix[pairs[:, 0]] - matrix[pairs[:, 1]]
    y = (rng.random(n) < 2 / (1 + np.exp(4.0 * np.sum((z @ basis) ** 2, axis=1)))).astype(float)
    unit = pair_obs.pair_hash_unit(pairs[:, 0], pairs[:, 1])

    def upto(m: int):
        return pair_obs.PairData(
            row_a=pairs[:m, 0],
            row_b=pairs[:m, 1],
            y=y[:m],
            held_out=unit[:m] < 0.2,
            hash=unit[:m],
            annotator=np.arange(m) % ANNOTATORS,
            pair=np.arange(m),
            gold=np.full(m, np.nan),
        )

    return _Space(matrix), upto


def _face_like(dim: int, seed: int) -> np.ndarray:
    v = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, 3)))[0]
    return np.eye(dim) - v @ v.T


def _fit(space, pairs, dim: int, refit: int, warm):
    from learning.refits import fitting

    return fitting.fit_explore(
        pairs,
        space.vectors,
        max_eigenvalue=None,
        prior=_face_like(dim, refit),
        prior_name="face-like",
        weight_by_reliability=True,
        warm=warm,
        fold_prior=lambda keep: _face_like(dim, refit + 100),
    )


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run(n: int, dim: int, new: int, items: int) -> list[tuple]:
    from learning.refits import cache

    cache.differences_forget()
    space, upto = _study(n, dim, items)
    first, wall, cpu = _timed(lambda: _fit(space, upto(n - new), dim, 1, None))
    rows = [(n, "first fit (cold, N - new answers)", wall, cpu, first)]
    kept, wall, cpu = _timed(lambda: _fit(space, upto(n), dim, 2, first.warm))
    rows.append(
        (n, f"warm refit, kept differences ({kept.diagnostics['differences']})", wall, cpu, kept)
    )
    cache.differences_forget()
    rebuilt, wall, cpu = _timed(lambda: _fit(space, upto(n), dim, 2, first.warm))
    rows.append((n, "warm refit, differences rebuilt", wall, cpu, rebuilt))
    cache.differences_forget()
    cold, wall, cpu = _timed(lambda: _fit(space, upto(n), dim, 2, None))
    rows.append((n, "cold refit", wall, cpu, cold))
    cache.differences_forget()
    return [(*row, cold) for row in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--new", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="one tiny size, for tests")
    args = parser.parse_args()
    items = N_ITEMS
    if args.quick:
        args.sizes, args.dim, items = [600], 6, 200
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    import django

    django.setup()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()}")
    print(f"# d = {args.dim}, {args.new} new answers, reliability EM on, FACE-like moving prior")
    print("| answers | fit | wall (s) | CPU (s) | held-out loglik (gap to cold) | loglik (gap) |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in args.sizes:
        for size, what, wall, cpu, out, cold in run(n, args.dim, args.new, items):
            h, c = out.diagnostics["heldout_loglik"], cold.diagnostics["heldout_loglik"]
            ll, cl = out.diagnostics["loglik"], cold.diagnostics["loglik"]
            gaps = f"{h:.6f} ({h - c:+.1e}) | {ll:.6f} ({ll - cl:+.1e})"
            if "first" in what:
                gaps = f"{h:.6f} | {ll:.6f}"
            print(f"| {size:,} | {what} | {wall:.2f} | {cpu:.2f} | {gaps} |", flush=True)
    print(f"# end: load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
