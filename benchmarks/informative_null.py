"""How often the app calls noise "informative": EXPLORE versions fitted on coin-flip answers
(labels independent of the items), through the app's own fit (``fitting.fit_explore``: folds by
the pair's hash, the held-out gain over the constant prediction with its 95 % interval) and the
app's rule (``learning/evaluation/informative.py``: the verdict on new items, issue 35; the gain
columns are the pair-level figures, kept beside it). Printed as markdown.

    python benchmarks/informative_null.py           # 200 draws per case (minutes)
    python benchmarks/informative_null.py --quick   # a few draws (smoke test, seconds)

Each draw makes a new space, new pairs, new answers and new fold hashes. Spaces: record tables
as the app encodes them (``spaces/records/featuremap.py``: standardised numbers, then one
column per category), and the Gaussian space of ``tests/learning/test_informative.py``. Answers:
each pair is comparable with probability ``p`` whatever its items; with ``repeat`` = 2 a second
annotator answers every pair the same (a pair's answer is fixed: deterministic annotators).

On such answers nothing beats the true constant ``p``; the constant fitted on a fold's training
part loses about 1/(2n) to it, and a metric fitted there loses more: the held-out gain's centre
must be ≤ 0, and the 95 % interval's lower end lies above 0 — a false "informative" — on at most
~2.5 % of draws (one-sided). A "signal" case (German credit, simulated annotators following
``experiments/credit.py``'s rule with 10 % flips) shows the rule still finds a real signal.
Columns: mean held-out gain ± its Monte Carlo s.e.; mean lower end of its interval; the share
of draws judged informative with its exact 95 % binomial interval (Clopper–Pearson); the
version's mean *fresh* gain — the fit on all answers against the constant of all answers,
expected over 20,000 fresh pairs under the answers' true law (the truth the held-out gain
estimates, for a fit on ~80 % of the answers: slightly pessimistic) — and the share of draws
whose interval covers it, with the misses where the truth lies below and above the interval.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import beta as beta_dist  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

from learning.core._pairloss import pair_loglik, quad_forms  # noqa: E402

HEADER = (
    "| case | answers | d | draws | gain ± MC s.e. | mean lower end | judged informative "
    "(95 % CI) | fresh gain | interval covers it (misses below, above) |"
)
FRESH = 20_000  # fresh pairs per draw for the version's expected gain


@dataclass(frozen=True)
class Case:
    name: str
    answers: int
    space: str  # "records" (4 numbers, 4 categorical columns), "gauss30", "credit"
    p: float = 0.5  # P(comparable) of a coin-flip answer; None-like < 0: the credit rule
    repeat: int = 1


CASES = [
    Case("coin flips, records", 40, "records"),
    Case("coin flips, records", 100, "records"),
    Case("coin flips, records", 300, "records"),
    Case("coin flips p = 0.75, records", 100, "records", p=0.75),
    Case("coin flips, records, 2 annotators agree", 100, "records", repeat=2),
    Case("coin flips, test's Gaussian space", 60, "gauss30"),
    Case("coin flips, German credit", 100, "credit"),
    Case("signal: credit rule, 10 % flips", 200, "credit", p=-1.0),
]


def _records(rng: np.random.Generator, rows: int = 300) -> np.ndarray:
    """A table of 4 numeric and 4 categorical columns (2-5 levels, uneven shares) as φ maps
    it: the numbers standardised (population SD), then one column per category seen."""
    numbers = rng.lognormal(size=(rows, 4))
    numbers = (numbers - numbers.mean(0)) / numbers.std(0)
    codes = []
    for levels in (2, 3, 4, 5):
        share = rng.dirichlet(np.full(levels, 2.0))
        value = rng.choice(levels, size=rows, p=share)
        codes.append(np.eye(levels)[value][:, np.unique(value)])
    return np.hstack([numbers, *codes])


def _credit():
    from experiments.credit import CATEGORICAL, NUMERIC, CreditRule, german_frame
    from spaces.records.featuremap import apply_feature_map, build_feature_map

    frame = german_frame()
    spec = build_feature_map(frame, numeric=NUMERIC, categorical=CATEGORICAL)
    return apply_feature_map(spec, frame), CreditRule.of(frame, flip=0.1)


def _draw(case: Case, seed: int, credit) -> tuple:
    """A space, ``case.answers`` answers on distinct random pairs (``repeat`` per pair), the
    items' ids (new per draw: new fold hashes)."""
    rng = np.random.default_rng(seed)
    if case.space == "records":
        matrix = _records(rng)
    elif case.space == "gauss30":
        matrix = rng.normal(scale=0.6, size=(120, 30))
    else:
        matrix = credit[0]
    rows = matrix.shape[0]
    m = case.answers // case.repeat
    if case.space == "gauss30":  # the test's shape: every item in one pair
        a, b = rng.permutation(rows // 2)[:m], rows // 2 + rng.permutation(rows // 2)[:m]
    else:
        seen = np.unique(np.sort(rng.integers(0, rows, size=(4 * m, 2)), axis=1), axis=0)
        seen = seen[seen[:, 0] != seen[:, 1]]
        a, b = seen[rng.permutation(len(seen))[:m]].T
    if case.p < 0:
        y = credit[1].answers(a, b, rng).astype(np.float64)
    else:
        y = (rng.random(m) < case.p).astype(np.float64)
    ids = rng.integers(1, 2**40) + np.arange(rows)
    rep = case.repeat
    return matrix, np.repeat(a, rep), np.repeat(b, rep), np.repeat(y, rep), ids


def _fresh_gain(matrix, sigma, y, case: Case, credit, rng) -> float:
    """The version's expected gain per answer over the constant (the rate of all its answers)
    on 20,000 fresh pairs of the space: each pair's log-likelihood averaged over the answers'
    true law (``p``, or the credit rule's probability with its flips)."""
    rows = matrix.shape[0]
    a, b = rng.integers(0, rows, size=(2, FRESH))
    a, b = a[a != b], b[a != b]
    z = matrix[a] - matrix[b]
    if case.p < 0:
        rule = credit[1]
        p = 2.0 / (1.0 + np.exp(rule.distance(a, b)))
        truth = (1 - rule.flip) * p + rule.flip * (1 - p)
    else:
        truth = np.full(a.size, case.p)
    fit = pair_loglik(np.maximum(quad_forms(z, sigma), 0.0), truth)
    rate = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
    return float(np.mean(fit - truth * np.log(rate) - (1 - truth) * np.log1p(-rate)))


def _fit(matrix, a, b, y, ids, repeat) -> tuple | None:
    from learning.refits import fitting, newitems
    from learning.refits import pairs as pair_obs
    from learning.versions.new_items import Figures, new_items_verdict

    unit = pair_obs.pair_hash_unit(ids[a], ids[b])
    pair = np.repeat(np.arange(y.size // repeat), repeat)
    pairs = pair_obs.PairData(
        row_a=a,
        row_b=b,
        y=y,
        held_out=unit < 0.2,
        hash=unit,
        annotator=np.tile(np.arange(repeat), y.size // repeat),
        pair=pair,
        gold=np.full(y.size, np.nan),
    )
    try:
        out = fitting.fit_explore(pairs, lambda rows: matrix[rows], max_eigenvalue=None)
    except fitting.FitError:
        return None  # too few answers of a label: the app fits nothing either
    const = out.diagnostics.get("heldout_baselines", {}).get("constant")
    if not const or None in const["gain_ci"]:
        return None
    read = matrix.__getitem__
    recipe = newitems.explore_recipe(
        read, max_eigenvalue=None, prior=None, prior_name="identity", weight_by_reliability=False
    )
    found, _ = newitems.new_items_check(pairs, read, recipe)
    fig = Figures(*(found[k] for k in ("gain", "gain_interval", "auc", "items", "pairs")))
    verdict = new_items_verdict(fig, answers=len(pairs))["verdict"]
    return const["gain"], tuple(const["gain_ci"]), verdict == "informative", out.sigma


def _row(case: Case, d: int, got: list) -> str:
    gain = np.array([g for g, _, _, _ in got])
    low = np.array([ci[0] for _, ci, _, _ in got])
    fresh = np.array([f for _, _, _, f in got])
    covered = np.mean([ci[0] <= f <= ci[1] for _, ci, _, f in got])
    below = sum(f < ci[0] for _, ci, _, f in got)  # misses with the truth below the interval
    k, n = sum(inf for _, _, inf, _ in got), len(got)
    lo = beta_dist.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta_dist.ppf(0.975, k + 1, n - k) if k < n else 1.0
    se = gain.std(ddof=1) / np.sqrt(n) if n > 1 else float("nan")
    return (
        f"| {case.name} | {case.answers} | {d} | {n} | {gain.mean():+.4f} ± {se:.4f} "
        f"| {low.mean():+.4f} | {k}/{n} = {k / n:.3f} ({lo:.3f}–{hi:.3f}) "
        f"| {fresh.mean():+.4f} | {covered:.3f} ({below}, {round(n * (1 - covered)) - below}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few draws per case")
    parser.add_argument("--draws", type=int, default=200, help="draws per case")
    parser.add_argument("--seed", type=int, default=0, help="first draw's seed")
    parser.add_argument("--case", type=int, action="append", help="only these cases (0-based)")
    args = parser.parse_args()
    import django

    django.setup()
    try:
        credit = _credit()
    except Exception as error:  # noqa: BLE001 - the optional data file: say so, skip its cases
        print(f"German credit cases skipped: {error}")
        credit = None
    draws = 3 if args.quick else args.draws
    chosen = args.case if args.case else range(len(CASES))
    print(HEADER)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i in chosen:
        case = CASES[i]
        if case.space == "credit" and credit is None:
            continue
        if args.quick and case.space == "credit" and case.p >= 0:
            continue
        started, got, d = time.perf_counter(), [], 0
        for seed in range(args.seed, args.seed + draws):
            matrix, a, b, y, ids = _draw(case, 1000 * i + seed, credit)
            d = matrix.shape[1]
            res = _fit(matrix, a, b, y, ids, case.repeat)
            if res is not None:
                fresh = _fresh_gain(matrix, res[3], y, case, credit, np.random.default_rng(seed))
                got.append((*res[:3], fresh))
        if got:
            print(_row(case, d, got), flush=True)
        print(f"<!-- {case.name}: {time.perf_counter() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
