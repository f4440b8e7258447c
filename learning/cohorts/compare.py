"""Where cohorts' metrics disagree, in figures: the cross-prediction table, the equal-cohort
fit against the pooled one on each cohort, the permutation test, the fields, the pairs.

Everything is held out by *items* (``learning/versions/new_items.py``): a metric's fold-k fit
(its recipe on the training part of fold k: no answer about an item of fold k) scores the
answers of a cohort about pairs of fold-k items. Cohort A's metric on cohort B's answers: A's
fold fits on B's held-out pairs, against B's own constant (the comparable rate of B's answers
in fold k's training part), so a column compares metrics on the same answers and the same
baseline; the diagonal is each cohort's own new-items gain (up to that baseline). The
equal-cohort fit against the pooled one on a cohort: the per-answer difference of their
log-likelihoods on the cohort's held-out answers (the new-items check's bounded score), its
interval the new-items one (a bootstrap-t on the dyadic-robust error over items)."""

from __future__ import annotations

import numpy as np

from learning.core._pairloss import quad_forms
from learning.core.fairness.cohorts import (
    annotator_scores,
    cohort_permutation_test,
    comparable_probability,
    difference_fields,
    disagreement_order,
    score_difference,
)
from learning.refits.cache import _rows_differences
from learning.refits.newitems import scoring
from learning.refits.pairs import PairData
from learning.versions.new_items import (
    distance_loglik,
    gain_interval,
    new_item_figures,
)

PAIRS_SHOWN = 20  # the pairs the cohorts most disagree on, kept in the report


class Held:
    """One cohort's held-out answers by item fold, with its own training rates."""

    def __init__(self, pairs: PairData, read, control_only: bool = False) -> None:
        split, mine, self.rates = scoring(pairs, control_only)  # as a version's new items
        self.row_a, self.row_b = pairs.row_a[mine], pairs.row_b[mine]
        self.y, self.fold = pairs.y[mine], split.held[mine]
        self.z = _rows_differences(read, self.row_a, self.row_b) if mine.any() else None

    def figures(self, fits: list) -> dict:
        if self.z is None:
            return {"gain": None, "gain_interval": None, "pairs": 0, "items": 0}
        fig = new_item_figures(
            self.z, self.y, self.fold, self.rates, fits, self.row_a, self.row_b
        ).as_dict()
        return {k: fig[k] for k in ("gain", "gain_interval", "auc", "pairs", "items")}

    def loglik(self, fits: list) -> np.ndarray:
        """Per held-out answer: its (bounded) log-likelihood under its fold's fit (NaN: not
        fitted)."""
        out = np.full(self.y.size, np.nan)
        for k in np.unique(self.fold):
            if k < len(fits) and fits[k] is not None:
                mine = self.fold == k
                d = np.maximum(quad_forms(self.z[mine], np.asarray(fits[k], float)), 0.0)
                out[mine] = distance_loglik(d, self.y[mine])
        return out


def cross_table(held: dict[str, Held], fits: dict[str, list]) -> list[dict]:
    """Each metric (``fits``: name → fold fits) on each cohort's held-out answers."""
    return [
        {"metric": source, "on": target} | cohort.figures(folds)
        for source, folds in fits.items()
        for target, cohort in held.items()
    ]


def better_than(held: dict[str, Held], fits: list, baseline: list) -> list[dict]:
    """Per cohort: the mean gain per answer of ``fits`` over ``baseline`` on its held-out
    answers, with the new-items interval (``gain_interval``)."""
    rows = []
    for name, cohort in held.items():
        if cohort.z is None:
            rows.append({"on": name, "difference": None, "interval": None, "pairs": 0})
            continue
        diff = cohort.loglik(fits) - cohort.loglik(baseline)
        ok = np.isfinite(diff)
        if not ok.any():
            rows.append({"on": name, "difference": None, "interval": None, "pairs": 0})
            continue
        mean = float(diff[ok].mean())
        interval = gain_interval(diff[ok], cohort.row_a[ok], cohort.row_b[ok])
        rows.append({"on": name, "difference": mean, "interval": interval, "pairs": int(ok.sum())})
    return rows


def differ_test(pairs: PairData, read, sigma, codes: np.ndarray, between, fields) -> dict:
    """The permutation test of the cohort labels over annotators at the pooled Σ (``codes``:
    per answer, its cohort or -1; learning/core/fairness/cohorts.py), and the fields that carry
    the difference of the cohorts ``between`` (two codes) as the scores say (``fields``:
    names, starts, one-hot flags; empty names: none)."""
    mine = (codes >= 0) & (pairs.annotator >= 0)
    z = _rows_differences(read, pairs.row_a[mine], pairs.row_b[mine])
    scores, who, answers = annotator_scores(z, pairs.y[mine], sigma, pairs.annotator[mine])
    first = {int(a): int(c) for a, c in zip(pairs.annotator[mine], codes[mine], strict=True)}
    labels = np.array([first[int(a)] for a in who], dtype=np.int64)
    if np.unique(labels).size < 2:
        return {"p_value": None, "why": "every annotator is in one cohort", "fields": []}
    test = cohort_permutation_test(
        scores, answers, np.unique(labels, return_inverse=True)[1].ravel()
    )
    names, starts, categorical = fields
    found = []
    if names and len(between) == 2:
        delta = score_difference(scores, answers, labels, *between, z.shape[1])
        found = _named_shares(difference_fields(delta, starts, categorical), names)
    return {
        "p_value": test.p_value,
        "statistic": test.statistic,
        "permutations": test.permutations,
        "annotators": test.annotators,
        "smallest_p": test.smallest_p,
        "fields": found,
    }


def _named_shares(shares: np.ndarray, names: list[str]) -> list[dict]:
    order = np.argsort(-np.nan_to_num(shares, nan=-1.0), kind="stable")
    return [{"field": names[i], "share": float(shares[i])} for i in order if np.isfinite(shares[i])]


def fields_between(sigma_a, sigma_b, names: list[str], starts, categorical) -> list[dict]:
    """The fields carrying the fitted ``Σ_A − Σ_B``, largest share first (none: no fields)."""
    if not names:
        return []
    return _named_shares(difference_fields(sigma_a - sigma_b, starts, categorical), names)


def disagreements(pairs: PairData, read, sigmas: dict[str, np.ndarray]) -> list[dict]:
    """The distinct answered pairs whose P(comparable) the cohorts' metrics put furthest apart
    (rows of the space; the caller names the items)."""
    keys = np.unique(np.stack([pairs.row_a, pairs.row_b], axis=1), axis=0)
    if keys.size == 0:
        return []
    z = _rows_differences(read, keys[:, 0], keys[:, 1])
    names = list(sigmas)
    order, spread = disagreement_order(z, [sigmas[n] for n in names])
    top = order[:PAIRS_SHOWN]
    p = {n: comparable_probability(z[top], sigmas[n]) for n in names}
    return [
        {
            "row_a": int(keys[i, 0]),
            "row_b": int(keys[i, 1]),
            "spread": float(spread[i]),
            "p": {n: float(p[n][j]) for n in names},
        }
        for j, i in enumerate(top)
    ]
