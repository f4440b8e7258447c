"""The Adult demo's pairs: from how many answers is the app's version informative for new people,
and what do new people get from it? Printed as markdown (docs/adult.md's table).

    python benchmarks/validity_adult.py                  # 1,000 … 25,000 answers (minutes)
    python benchmarks/validity_adult.py --answers 1000   # one size

The seed paper's pairs over UCI Adult's training file (30,162 people, the demo's seed; φ as the
demo's record space builds it: standardised numerics, one-hot categoricals): the first *n* of
one random order (seed 0), one annotator (no reliability weights), through the refit's own
functions as ``benchmarks/validity.py`` calls them (``fitting.fit_explore``,
``newitems.new_items_check``, ``new_items_verdict``). The stored Sigma is also scored on
**fresh pairs of new people**: the paper's pairs built from the test file's 15,060 people
(seed 1; φ fitted on the training file), 25,000 of them as in the paper, against the
comparable rate of the answers seen — with the verdict's score (``new_items.distance_loglik``) and interval
(``gain_interval``), and the held-out AUC.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

SIZES = (1_000, 2_500, 5_000, 10_000, 25_000)
HEADER = (
    "| answers | new-items verdict | gain on new items (95 %), AUC | held-out pairs / people "
    "| fresh pairs of new people (test file): gain (95 %), AUC |"
)


def _population():
    """φ of the training and test files (the training file's scale), and the paper's pairs
    over each (25,000, the paper's numbers): training (the demo's seed), test (seed 1)."""
    from experiments.adult.data import (
        CATEGORICAL,
        GENDER_COLUMN,
        LABEL,
        NUMERIC,
        POSITIVE,
        adult_frame,
        adult_pairs,
    )
    from experiments.adult.demo import SEED
    from spaces.records.featuremap import apply_feature_map, build_feature_map

    train, test = adult_frame("train"), adult_frame("test")
    spec = build_feature_map(train, numeric=NUMERIC, categorical=CATEGORICAL)

    def pairs_of(frame, seed):
        income = (frame[LABEL] == POSITIVE).to_numpy()
        female = (frame[GENDER_COLUMN] == "Female").to_numpy()
        return adult_pairs(income, female, seed=seed)

    return (
        apply_feature_map(spec, train),
        pairs_of(train, SEED),
        apply_feature_map(spec, test),
        pairs_of(test, 1),
    )


def size_row(phi, pairs, labels, test_phi, fresh, fresh_labels, n: int) -> str:
    from benchmarks.validity import _pairs
    from learning.core._pairloss import quad_forms
    from learning.refits import fitting, newitems
    from learning.versions.new_items import (
        Figures,
        _auc,
        distance_loglik,
        gain_interval,
        new_items_verdict,
        scored_loglik,
    )

    order = np.random.default_rng(0).permutation(len(pairs))[:n]
    a, b, y = pairs[order, 0], pairs[order, 1], labels[order].astype(np.float64)
    data = _pairs(a, b, y)  # reliability weights off: one annotator's answers
    args = {
        "max_eigenvalue": None,
        "prior": None,
        "prior_name": "identity",
        "weight_by_reliability": False,
    }

    def read(rows):
        return phi[rows]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sigma = fitting.fit_explore(data, read, keep_differences=False, **args).sigma
        found, _ = newitems.new_items_check(data, read, newitems.explore_recipe(read, **args))
    fig = Figures(*(found[k] for k in ("gain", "gain_interval", "auc", "items", "pairs")))
    verdict = new_items_verdict(fig, answers=n)
    fa, fb = fresh[:, 0], fresh[:, 1]
    yf = fresh_labels.astype(np.float64)
    d = np.maximum(quad_forms(test_phi[fa] - test_phi[fb], sigma), 0.0)
    gain = distance_loglik(d, yf) - scored_loglik(float(y.mean()), yf)
    low, high = gain_interval(gain, fa, fb)
    own = "—"
    if fig.gain is not None:
        span = f" ({fig.gain_interval[0]:+.3f} to {fig.gain_interval[1]:+.3f})"
        own = f"{fig.gain:+.3f}{span if fig.gain_interval else ''}, {fig.auc:.3f}"
    return (
        f"| {n:,} | {verdict['verdict']} | {own} | {fig.pairs:,} / {fig.items:,} "
        f"| {gain.mean():+.3f} ({low:+.3f} to {high:+.3f}), AUC {_auc(yf, -d):.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, action="append", help="only these sizes")
    args = parser.parse_args()
    import django

    django.setup()
    started = time.perf_counter()
    phi, (pairs, labels), test_phi, (fresh, fresh_labels) = _population()
    print(HEADER)
    print("|---:|---|---|---:|---|")
    for n in args.answers or SIZES:
        print(size_row(phi, pairs, labels, test_phi, fresh, fresh_labels, n), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
