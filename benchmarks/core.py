"""Benchmarks of the numerical core (learning.core), one BLAS thread, printed as markdown.

    python benchmarks/core.py           # full sizes (about two minutes)
    python benchmarks/core.py --quick   # small sizes, a few seconds (smoke test)

EXPLORE: 100k pairs simulated from the response model y ~ Bernoulli(2σ(-zᵀΣ₀z)) with a
low-rank-plus-identity Σ₀ (comparable pairs differ mostly along a 3-d sensitive subspace that Σ₀
ignores), fitted with the defaults (penalty chosen on a validation path); "best" is a long float64 run
(tol 1e-12) of the same penalised objective (the chosen alpha_) on the same data (its train
loglik is compared, so "gap" is approximate: the penalised optimum maximises loglik − penalty);
held-out log-likelihood on 20k fresh pairs. FACE: float32 rows in groups of 10 (list form, also
with two BLAS threads) and one big group; after the table, the float32 Gram's accuracy against
the float64 computation. WEAT: the 10 tests of Caliskan et al. with their real set sizes
(../shared/data/weat_caliskan.json when present) on random 50-d vectors, 50,000 permutations.
Wall time is what the targets are about; CPU time is also shown because the machine is shared.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from learning.core._validation import as_groups  # noqa: E402
from learning.core.explore import EXPLORE  # noqa: E402
from learning.core.face import FACE, within_group_scatter  # noqa: E402
from learning.core.weat import weat  # noqa: E402

WEAT_JSON = ROOT.parent / "shared" / "data" / "weat_caliskan.json"
# (|X|, |Y|, |A|, |B|) of the 10 tests, used when the JSON file is not available.
WEAT_SIZES = [
    (25, 25, 25, 25),
    (25, 25, 25, 25),
    (50, 50, 25, 25),
    (18, 18, 25, 25),
    (18, 18, 8, 8),
    (8, 8, 8, 8),
    (8, 8, 8, 8),
    (8, 8, 8, 8),
    (6, 6, 7, 7),
    (8, 8, 8, 8),
]
HEADER = (
    "| benchmark | size | wall (s) | CPU (s) | iterations | train loglik | held-out loglik "
    "| best loglik | gap | target | met |"
)


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def simulate_pairs(n, d, rng, k=3, r=5):
    q, _ = np.linalg.qr(rng.standard_normal((d, k + r)))
    u, rel = q[:, :k], q[:, k:]
    sigma0 = (np.eye(d) - u @ u.T) + 4.0 * rel @ rel.T + 0.01 * u @ u.T

    def draw(m):
        s = rng.uniform(0.0, 2.0, size=m)
        z = (rng.standard_normal((m, k)) * 2.0) @ u.T
        z += (s / np.sqrt(d))[:, None] * rng.standard_normal((m, d))
        dist = np.einsum("ij,jk,ik->i", z, sigma0, z)
        return z, (rng.uniform(size=m) < 2.0 * expit(-dist)).astype(float)

    return draw(n), draw(max(n // 5, 1000))


def bench_explore(n, d, seed):
    rng = np.random.default_rng(seed)
    (z, y), (zt, yt) = simulate_pairs(n, d, rng)
    model, wall, cpu = timed(lambda: EXPLORE().fit_differences(z, y))
    # "best": the same penalised objective (the chosen alpha_ and prior) solved in float64
    best = EXPLORE(
        precision="double",
        tol=1e-12,
        max_iter=5000,
        alpha=model.alpha_,
        prior_scale=model.prior_scale_,
    ).fit_differences(z, y)
    best_ll = max(best.loglik_, model.loglik_)
    zero = np.zeros_like(zt)
    target = 0.5 if d <= 50 else 8.0
    gap = best_ll - model.loglik_
    return [
        f"EXPLORE{'' if model.converged_ else ' (not converged)'}",
        f"{n:,} pairs, d={d}",
        f"{wall:.3f}",
        f"{cpu:.3f}",
        str(model.n_iter_),
        f"{model.loglik_:.6f}",
        f"{model.score(zt, zero, yt):.6f}",
        f"{best_ll:.6f}",
        f"{gap:.1e}",
        f"≤ {target:g} s, gap ≤ 1e-4",
        _met(wall <= target and gap <= 1e-4),
    ]


def face_data(n, d, group_size, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=np.float32)
    x[:, :3] *= 3.0
    if group_size is None:
        return x, [np.arange(n)], "one group"
    return x, list(np.arange(n - n % group_size).reshape(-1, group_size)), f"groups of {group_size}"


def bench_face(n, d, group_size, seed, threads=1):
    x, groups, label = face_data(n, d, group_size, seed)
    with threadpool_limits(threads):
        model, wall, cpu = timed(lambda: FACE(n_components=3).fit(x, groups))
    target = 5.0 if n >= 1_000_000 else None
    if threads > 1:
        label += f", {threads} BLAS threads"
    return [
        f"FACE (k=3, {model.precision_})",
        f"{n:,}×{d}, {label}",
        f"{wall:.3f}",
        f"{cpu:.3f}",
        "–",
        "–",
        "–",
        "–",
        "–",
        "–" if target is None else f"≤ {target:g} s",
        "–" if target is None else _met(wall <= target),
    ]


def face_accuracy(n, d, group_size, seed):
    """FACE's float32 Gram (the default for float32 rows) against the float64 computation."""
    x, groups, label = face_data(n, d, group_size, seed)
    rows, sizes = as_groups(groups, n)
    s32 = within_group_scatter(x, rows, sizes, "mixed")
    s64 = within_group_scatter(x, rows, sizes, "double")
    m32 = FACE(n_components=3).fit(x, groups)
    m64 = FACE(n_components=3, precision="double").fit(x, groups)
    return (
        f"FACE float32 Gram vs float64 ({n:,}×{d}, {label}): scatter relative error "
        f"{np.linalg.norm(s32 - s64) / np.linalg.norm(s64):.1e} (Frobenius), "
        f"‖ΔΣ‖_op {np.linalg.norm(m32.sigma_ - m64.sigma_, 2):.1e}, singular values relative "
        f"{np.max(np.abs(m32.singular_values_ / m64.singular_values_ - 1)):.1e}"
    )


def weat_sizes():
    if WEAT_JSON.exists():
        tests = json.loads(WEAT_JSON.read_text())
        return [
            tuple(
                len(t[k]["words"])
                for k in ("first_target", "second_target", "first_attribute", "second_attribute")
            )
            for t in tests
        ]
    return WEAT_SIZES


def bench_weat(n_permutations, seed):
    rng = np.random.default_rng(seed)
    sizes = weat_sizes()
    sets = [[rng.standard_normal((m, 50)) for m in s] for s in sizes]
    results, wall, cpu = timed(
        lambda: [
            weat(*s, n_permutations=n_permutations, random_state=i) for i, s in enumerate(sets)
        ]
    )
    exact = sum(r.exact for r in results)
    return [
        "WEAT table",
        f"{len(sizes)} tests, {n_permutations:,} permutations ({exact} exact)",
        f"{wall:.3f}",
        f"{cpu:.3f}",
        "–",
        "–",
        "–",
        "–",
        "–",
        "≤ 1 s",
        _met(wall <= 1.0),
    ]


def _met(ok):
    return "yes" if ok else "**no**"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    args = parser.parse_args(argv)
    with threadpool_limits(1):
        if args.quick:
            runs = [
                lambda: bench_explore(5000, 10, 0),
                lambda: bench_face(1200, 50, 10, 1),
                lambda: bench_face(20000, 30, None, 2),
                lambda: bench_weat(2000, 3),
            ]
        else:
            runs = [
                lambda: bench_explore(100_000, 50, 0),
                lambda: bench_explore(100_000, 300, 0),
                lambda: bench_face(1200, 50, 10, 1),
                lambda: bench_face(1200, 50, None, 1),
                lambda: bench_face(1_000_000, 300, 10, 2),
                lambda: bench_face(1_000_000, 300, 10, 2, threads=2),
                lambda: bench_face(1_000_000, 300, None, 2),
                lambda: bench_weat(50_000, 3),
            ]
        print("## learning.core benchmarks" + (" (quick)" if args.quick else ""))
        print(
            f"\nOne BLAS thread; {os.cpu_count()} CPUs; load average "
            f"{os.getloadavg()[0]:.1f} at start.\n"
        )
        print(HEADER)
        print("|" + "---|" * (HEADER.count("|") - 1))
        for run in runs:
            print("| " + " | ".join(run()) + " |", flush=True)
        size = (20000, 30) if args.quick else (1_000_000, 300)
        print("\n" + face_accuracy(*size, 10, 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
