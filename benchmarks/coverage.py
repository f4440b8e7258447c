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

New-items interval (``learning/versions/new_items.py``, issue 35): a pool of items drawn from a
population, answers on random pairs of the pool, the app's new-items check
(``learning/refits/newitems.py``: EXPLORE refitted on each item fold's training part, the
held-out items' pairs scored against the training rate with the verdict's bounded score, the
bootstrap-t interval on the dyadic-robust error, floored at Student's t; ``--unbounded`` adds
the plain log-likelihood's gain with a dyadic Wald interval beside it). The truth is what the interval estimates: the fold
fits' expected gain over their constant on a fresh pair of *new* items (20,000 pairs of 2,000 items drawn anew from the population, averaged over the
folds as the held-out pairs weigh them). Spaces: "word" (Gaussian, d = 10, a rank-2 rule on φ),
"record" (the app's φ of a table with 3 log-normal — heavy-tailed — columns and 2 categorical
ones, the rule on two of the heavy-tailed columns), "text" (all-MiniLM-L6-v2 embeddings of short
descriptions of UCI Adult people, the rule on their age and hours; only when the sentence model
and Adult's file are installed). 10 % of answers flipped.
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
from learning.versions.new_items import item_split  # noqa: E402

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


NEW_ITEM_CASES = {"word": (200, 800), "record": (200, 800), "text": (200, 800)}  # items, answers


def _word_population(rng):
    basis = np.linalg.qr(rng.normal(size=(10, 2)))[0]
    sigma0 = basis @ np.diag([0.6, 0.3]) @ basis.T

    def draw(n, r):
        x = r.normal(size=(n, 10))
        return x, x

    return draw, lambda za, zb: np.einsum("ij,jk,ik->i", za - zb, sigma0, za - zb)


def _record_population(rng):
    from spaces.records.featuremap import apply_feature_map, build_feature_map

    def frame_of(n, r):
        import pandas as pd

        cols = {f"n{i}": r.lognormal(sigma=1.0, size=n) for i in range(3)}
        cols |= {f"c{i}": r.choice(list("abcd")[: 2 + i], size=n) for i in range(2)}
        return pd.DataFrame(cols)

    base = frame_of(5000, np.random.default_rng(99))  # φ's scale fixed once, as an upload's
    spec = build_feature_map(base, numeric=["n0", "n1", "n2"], categorical=["c0", "c1"])
    scale = base[["n0", "n1"]].to_numpy().std(axis=0)

    def draw(n, r):
        frame = frame_of(n, r)
        return apply_feature_map(spec, frame), frame[["n0", "n1"]].to_numpy() / scale

    return draw, lambda ta, tb: np.sum((ta - tb) ** 2, axis=1)


def _text_population(rng):
    from experiments.adult.data import adult_frame
    from spaces.texts import sentence_model

    if not sentence_model.available():
        raise RuntimeError("the sentence model is not installed")
    frame = adult_frame("train").sample(6000, random_state=1).reset_index(drop=True)
    texts = [
        f"A {r['age']}-year-old {r['sex'].lower()} {r['occupation'].lower()} working "
        f"{r['hours-per-week']} hours a week, {r['marital-status'].lower()}."
        for _, r in frame.iterrows()
    ]
    vectors = np.asarray(sentence_model.encode(texts), dtype=np.float64)
    traits = frame[["age", "hours-per-week"]].to_numpy(np.float64)
    traits = traits / traits.std(axis=0)

    def draw(n, r):
        rows = r.choice(len(texts), size=n, replace=False)
        return vectors[rows], traits[rows]

    return draw, lambda ta, tb: np.sum((ta - tb) ** 2, axis=1)


def _quad(z, sigma):
    """Each row's zᵀΣz (a matrix product: a three-operand einsum took 3 s per fold in d = 384)."""
    return np.einsum("ij,ij->i", z @ sigma, z)


def _law(dist):
    return 0.9 * 2.0 / (1.0 + np.exp(dist)) + 0.05


def _unbounded_interval(held: dict, fits: list, x: np.ndarray):
    """The new-items gain with the plain log-likelihood (no lapse) and its dyadic interval
    (``--unbounded``: what the app's bounded score replaced)."""
    from benchmarks.validity import plain_gain
    from learning.versions.new_items import dyadic_se

    z = x[held["row_a"]] - x[held["row_b"]]
    gain = np.full(held["y"].size, np.nan)
    for f in np.unique(held["fold"]):
        if fits[f] is None:
            continue
        mine = held["fold"] == f
        d = np.maximum(_quad(z[mine], fits[f]), 0.0)
        gain[mine] = plain_gain(d, held["y"][mine], held["rates"][f])
    ok = np.isfinite(gain)
    se = dyadic_se(gain[ok], held["row_a"][ok], held["row_b"][ok])
    mean = float(gain[ok].mean())
    return mean - 1.96 * se, mean + 1.96 * se


def new_items_coverage(
    reps: int, spaces: list[str], truth_pairs: int, unbounded: bool = False, first: int = 0
) -> list[str]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    import django

    django.setup()  # the refit's modules read the models
    from benchmarks.validity import _pairs, plain_gain  # PairData of two annotators
    from learning.refits import newitems
    from learning.versions.new_items import distance_loglik, scored_loglik

    rows = []
    for name in spaces:
        rng = np.random.default_rng([35, len(name)] + ([first] if first else []))
        try:
            draw, dist = {
                "word": _word_population,
                "record": _record_population,
                "text": _text_population,
            }[name](rng)
        except Exception as error:  # noqa: BLE001 - an optional model or file: say so
            rows.append(f"<!-- new-items interval, {name}: skipped ({error}) -->")
            continue
        n_items, n_answers = NEW_ITEM_CASES[name]
        hits, truths = [0, 0, 0], []
        plain_hits, plain_truths = [0, 0, 0], []
        for _rep in range(reps):
            x, t = draw(n_items, rng)
            a, b = rng.integers(0, n_items, size=(2, 2 * n_answers))
            a, b = a[a != b][:n_answers], b[a != b][:n_answers]
            y = (rng.random(a.size) < _law(dist(t[a], t[b]))).astype(float)
            pairs = _pairs(a, b, y)
            read = x.__getitem__
            recipe = newitems.explore_recipe(
                read,
                max_eigenvalue=None,
                prior=None,
                prior_name="identity",
                weight_by_reliability=False,
            )
            found, folds = newitems.new_items_check(pairs, read, recipe)
            if found["gain_interval"] is None:
                continue
            fx, ft = draw(2000, rng)
            fa, fb = rng.integers(0, 2000, size=(2, truth_pairs))
            fa, fb = fa[fa != fb], fb[fa != fb]
            p, z = _law(dist(ft[fa], ft[fb])), fx[fa] - fx[fb]
            held = item_split(a, b).held
            weights, gains, plain = [], [], []
            for k, fit in enumerate(folds.fits):
                if fit is None or not np.any(held == k):
                    continue
                d_fit = np.maximum(_quad(z, fit), 0.0)
                rate = float(folds.rates[k])
                gains.append(float(np.mean(distance_loglik(d_fit, p) - scored_loglik(rate, p))))
                if unbounded:
                    plain.append(float(np.mean(plain_gain(d_fit, p, rate))))
                weights.append(int(np.sum(held == k)))
            truth = float(np.average(gains, weights=weights))
            truths.append(truth)
            _tally(hits, truth, *found["gain_interval"])
            if unbounded:
                plain_truths.append(float(np.average(plain, weights=weights)))
                interval = _unbounded_interval(folds.held(pairs), folds.fits, x)
                _tally(plain_hits, plain_truths[-1], *interval)
        if sum(hits):
            case = f"{name}, {n_items} items, {n_answers} answers"
            rows.append(_row("new-items gain", case, float(np.mean(truths)), hits, 0.95))
        if sum(plain_hits):
            truth = float(np.mean(plain_truths))
            rows.append(_row("new-items gain, unbounded loss", case, truth, plain_hits, 0.95))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few replicates (smoke test)")
    parser.add_argument("--part", choices=["all", "weat", "heldout", "newitems"], default="all")
    parser.add_argument("--space", action="append", help="new-items spaces (word, record, text)")
    parser.add_argument("--pairs", type=int, choices=list(PAIR_CASES), help="one held-out case")
    parser.add_argument("--reps", type=int, help="held-out replicates (default: the case's)")
    parser.add_argument("--seed", type=int, default=1, help="held-out streams (runs to pool)")
    parser.add_argument(
        "--unbounded",
        action="store_true",
        help="new items: also the interval of the plain log-likelihood's gain (no lapse)",
    )
    parser.add_argument(
        "--first", type=int, default=0, help="new items: another replicate stream (runs to pool)"
    )
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
    for row in weat_coverage(weat_reps, n_boot, truth) if args.part in ("all", "weat") else []:
        print(row, flush=True)
    held = args.part in ("all", "heldout")
    for row in heldout_coverage(cases, truth, args.seed) if held else []:
        print(row, flush=True)
    if args.part in ("all", "newitems"):
        spaces = args.space or (["word", "record"] if args.quick else list(NEW_ITEM_CASES))
        reps = 2 if args.quick else (args.reps or 200)
        truth_pairs = 2_000 if args.quick else 20_000
        for row in new_items_coverage(reps, spaces, truth_pairs, args.unbounded, args.first):
            print(row, flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
