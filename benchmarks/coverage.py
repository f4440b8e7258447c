"""Coverage of fairmetric's intervals against simulated truths: nominal level against measured
coverage, with its Monte Carlo standard error, printed as markdown.

    python benchmarks/coverage.py           # full (2,000 WEAT replicates per case; 400, 400 and 100 held-out ones)
    python benchmarks/coverage.py --quick   # a few replicates (smoke test, seconds)

WEAT effect size (``learning/core/weat.py``): target words drawn from two populations in
d = 10 (means apart along a fixed direction, unit covariance), attribute sets of 8 fixed words.
The truth is the population effect size ``(μ_X - μ_Y)/σ_pooled`` of the association scores
``s(w)``, where ``σ_pooled`` is the SD of the mixture of both populations in the proportions
``|X| : |Y|`` (what the sample statistic's SD of ``X ∪ Y`` estimates), computed from 400,000
words per population. Each replicate draws the target sets anew and asks both intervals:
``effect_size_ci`` (the app's: studentized bootstrap on the within-set standardised gap, floored
at Student's t, mapped to d) and ``bootstrap_effect_size_ci`` (percentile, the former one). "below"/"above": replicates whose interval lies below/above the
truth.

Held-out log-likelihood (``EXPLORE.heldout_loglik_ci_``): pairs with differences ``z ~ N(0, I)``
in d = 5, answers from the response model with a rank-2 truth Σ₀, EXPLORE with its defaults
(penalty chosen by held-out likelihood on the same pairs; the interval from pairs whose penalty
was chosen without them, its standard error the pairs' plus, over five folds, the fold fits' own
spread as a random effect). The truth is the expected log-likelihood of a fresh pair under the
fitted Σ (400,000 fresh pairs).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from learning.core.explore import EXPLORE, pair_loglik  # noqa: E402
from learning.core.weat import association_scores, bootstrap_effect_size_ci, effect_size_ci  # noqa: E402

HEADER = "| interval | case | truth | replicates | nominal | measured ± MC s.e. | below | above |"
DIM = 10
TRUTH_WORDS = 400_000
WEAT_CASES = [(8, 0.0), (8, 1.0), (8, 3.1), (12, 1.0), (25, 0.0), (25, 1.0), (25, 3.1)]
PAIR_CASES = {500: 400, 2_000: 400, 30_000: 100}  # pairs: replicates (a fit of 30,000: ~2 s)


def _row(name: str, case: str, truth: float, hits: list[int], level: float) -> str:
    reps = sum(hits)
    cover = hits[0] / reps
    se = np.sqrt(cover * (1 - cover) / reps)
    return (
        f"| {name} | {case} | {truth:.4f} | {reps} | {level:.2f} | {cover:.3f} ± {se:.3f} "
        f"| {hits[1]} | {hits[2]} |"
    )


def _tally(hits: list[int], truth: float, low: float, high: float) -> None:
    hits[0 if low <= truth <= high else (1 if high < truth else 2)] += 1


def weat_coverage(reps: int, n_boot: int, truth_words: int, level: float = 0.95) -> list[str]:
    rng = np.random.default_rng(0)
    direction = np.zeros(DIM)
    direction[0] = 1.0
    a = rng.normal(size=(8, DIM)) + 1.5 * direction
    b = rng.normal(size=(8, DIM)) - 1.5 * direction
    rows = []
    for words, shift in WEAT_CASES:
        big_x = rng.normal(size=(truth_words, DIM)) + shift * direction / 2
        big_y = rng.normal(size=(truth_words, DIM)) - shift * direction / 2
        s_x, s_y = association_scores(big_x, big_y, a, b, None)
        within = np.sqrt((s_x.var() + s_y.var()) / 2)
        gap = s_x.mean() - s_y.mean()
        truth = float(gap / np.sqrt(within**2 + gap**2 / 4))  # equal sizes: p = 1/2
        hits = {"studentized bootstrap": [0, 0, 0], "percentile bootstrap": [0, 0, 0]}
        for _ in range(reps):
            x = rng.normal(size=(words, DIM)) + shift * direction / 2
            y = rng.normal(size=(words, DIM)) - shift * direction / 2
            ci = effect_size_ci(x, y, a, b, n_boot=n_boot, level=level, random_state=rng)
            _tally(hits["studentized bootstrap"], truth, ci.low, ci.high)
            boot = bootstrap_effect_size_ci(x, y, a, b, n_boot=n_boot, random_state=rng)
            _tally(hits["percentile bootstrap"], truth, boot.low, boot.high)
        for name, tally in hits.items():
            rows.append(_row(f"WEAT d, {name}", f"{words} words per set", truth, tally, level))
    return rows


def heldout_coverage(cases: dict[int, int], truth_pairs: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(1)
    d = 5
    basis = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    sigma0 = basis @ np.diag([0.6, 0.3]) @ basis.T
    rows = []
    for n, reps in cases.items():
        rng = np.random.default_rng([seed, n])  # each case its own stream (alone: --pairs)
        hits, truths = [0, 0, 0], []
        for rep in range(reps):
            z = rng.normal(size=(n, d))
            y = rng.random(n) < 2.0 / (1.0 + np.exp(np.einsum("ij,jk,ik->i", z, sigma0, z)))
            model = EXPLORE(random_state=rep).fit_differences(z, y.astype(float))
            fresh = rng.normal(size=(truth_pairs, d))
            p = 2.0 / (1.0 + np.exp(np.einsum("ij,jk,ik->i", fresh, sigma0, fresh)))
            d_fit = np.maximum(np.einsum("ij,jk,ik->i", fresh, model.sigma_, fresh), 0.0)
            # the expected log-likelihood of a fresh pair: its label's expectation given z
            truth = float(np.mean(pair_loglik(d_fit, p)))
            truths.append(truth)
            _tally(hits, truth, *model.heldout_loglik_ci_)
        rows.append(_row("held-out loglik", f"{n:,} pairs", float(np.mean(truths)), hits, 0.95))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few replicates (smoke test)")
    parser.add_argument("--part", choices=["all", "weat", "heldout"], default="all")
    parser.add_argument("--pairs", type=int, choices=list(PAIR_CASES), help="one held-out case")
    parser.add_argument("--reps", type=int, help="held-out replicates (default: the case's)")
    parser.add_argument("--seed", type=int, default=1, help="held-out streams (runs to pool)")
    args = parser.parse_args()
    started = time.perf_counter()
    weat_reps, n_boot = (20, 200) if args.quick else (2000, 500)
    cases = dict.fromkeys(list(PAIR_CASES)[:2], 4) if args.quick else dict(PAIR_CASES)
    if args.pairs:
        cases = {args.pairs: cases.get(args.pairs, 4)}
    if args.reps:
        cases = dict.fromkeys(cases, args.reps)
    truth = 20_000 if args.quick else TRUTH_WORDS
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    for row in weat_coverage(weat_reps, n_boot, truth) if args.part != "heldout" else []:
        print(row, flush=True)
    for row in [] if args.part == "weat" else heldout_coverage(cases, truth, args.seed):
        print(row, flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
