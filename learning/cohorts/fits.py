"""The metric versions of cohorts: each cohort's EXPLORE (its own answers, reliability weights
within it when the study weighs by reliability) and the equal-cohort EXPLORE (every cohort's
answers weighted so that the cohorts count equally), each stored as an ordinary version marked
with its cohort (``MetricVersion.cohort``) and judged on new items like any version: its recipe
refitted on each item fold's training part (``learning/refits/newitems.py``).

Both use the identity prior (docs/cohorts.md, "Limits"); the equal-cohort fit is not weighted
by reliability (a weight per cohort only) and leaves out the answers of no cohort.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from annotation.labelling.strategies import control_only
from learning.core.explore import EXPLORE
from learning.evaluation.informative import version_judge
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import cache, fitting, newitems
from learning.refits.newitems import FoldFits, pairs_subset
from learning.refits.pairs import PairData
from learning.versions import storage

Method = MetricVersion.Method
EQUAL = "equal"


@dataclass
class CohortFit:
    """One stored cohort version and its new-items fold fits (None: it failed)."""

    key: str  # the cohort's value, or EQUAL
    version: MetricVersion | None
    folds: FoldFits | None
    sigma: np.ndarray | None


def equal_weights(codes: np.ndarray) -> np.ndarray:
    """Per answer: ``n / (K · n_c)`` for cohort ``c`` of the answer (mean 1, cohorts equal)."""
    values, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    return codes.size / (values.size * counts[inverse.ravel()])


def _explore_args(learning: StudyLearningSettings) -> dict:
    return {
        "max_eigenvalue": learning.explore_max_eigenvalue,
        "prior": None,
        "prior_name": "identity",
        "weight_by_reliability": learning.weight_by_reliability,
    }


def _equal_fit(pairs: PairData, read, codes: np.ndarray, max_eigenvalue) -> EXPLORE:
    z = cache.differences_once(read, pairs.row_a, pairs.row_b)
    model = EXPLORE(max_eigenvalue=max_eigenvalue, random_state=0)
    folds = fitting.explore_folds(pairs, z.shape[1])
    return model.fit_differences(z, pairs.y, sample_weight=equal_weights(codes), validation=folds)


def equal_recipe(read, codes: np.ndarray, max_eigenvalue):
    """The equal-cohort fit on a training part (``keep`` over the fit's answers)."""

    def fit(sub: PairData, keep: np.ndarray, fold: int | None = None) -> np.ndarray:
        short = fitting.explore_shortfall_of(sub.y)
        if not short.ok:
            raise fitting.FitError(short.message)
        return _equal_fit(sub, read, codes[keep], max_eigenvalue).sigma_

    return fit


def _version(study, pooled: MetricVersion, label: str, cohort: str, make_up: dict, counts):
    """A ``fitting`` row for the cohort's fit of ``pooled``'s data (None: one exists)."""
    parameters = dict(pooled.parameters or {}) | {"cohort": make_up}
    parameters.pop("prior", None)
    return storage.version_start(
        study=study,
        method=Method.EXPLORE,
        label=label[:50],
        parameters=parameters,
        judgment_watermark=pooled.judgment_watermark,
        group_watermark=pooled.group_watermark,
        judgment_count=int((pooled.counts or {}).get("judgments_total") or 0),
        counts=counts,
        parent=pooled,
        cohort=cohort[:100],
    )


def _store(version, sigma, parameters, diagnostics, new_items, folds, sub, started) -> None:
    storage.version_store(
        version,
        sigma=sigma,
        parameters=parameters,
        diagnostics=diagnostics | {"new_items": new_items},
        fit_seconds=time.perf_counter() - started,
    )
    newitems.store_folds(version, folds, sub)
    version_judge(version)


def _counts(sub: PairData, pooled: MetricVersion) -> dict:
    """The cohort fit's counts; ``judgments_total`` stays the study's (the sweep compares it
    with the study's answers at the version's watermark)."""
    who = sub.annotator[sub.annotator >= 0] if sub.annotator is not None else np.empty(0)
    n = len(sub)
    return {
        "observations": n,
        "judgments": n,
        "judgments_total": int((pooled.counts or {}).get("judgments_total") or 0),
        "annotators": int(np.unique(who).size),
    }


def cohort_fit(
    study, pooled, learning, pairs: PairData, mask: np.ndarray, *, attribute, value, make_up
) -> CohortFit:
    """One cohort's EXPLORE (answers ``mask``), stored and judged."""
    sub = pairs_subset(pairs, mask)
    label, key = f"explore {attribute}={value}", f"{attribute}={value}"
    version = _version(study, pooled, label, key, make_up | {"value": value}, _counts(sub, pooled))
    if version is None:
        return CohortFit(value, None, None, None)
    started, read = time.perf_counter(), study.space.vectors
    try:
        args = _explore_args(learning)
        outcome = fitting.fit_explore(sub, read, keep_differences=False, **args)
        recipe = newitems.explore_recipe(read, **args)
        new_items, folds = newitems.new_items_check(
            sub, read, recipe, control_only=control_only(study.strategy)
        )
        _store(
            version,
            outcome.sigma,
            outcome.parameters,
            outcome.diagnostics,
            new_items,
            folds,
            sub,
            started,
        )
    except Exception as error:  # noqa: BLE001 - stored on the version, like a refit's
        storage.version_fail(version, f"{type(error).__name__}: {error}", transient=False)
        return CohortFit(value, None, None, None)
    version.refresh_from_db()
    return CohortFit(value, version, folds, outcome.sigma)


def equal_fit(
    study, pooled, learning, pairs: PairData, codes: np.ndarray, *, attribute, make_up
) -> CohortFit:
    """The equal-cohort EXPLORE on the answers of the cohorts fitted (``codes`` ≥ 0)."""
    mask = codes >= 0
    sub, sub_codes = pairs_subset(pairs, mask), codes[mask]
    label, key = f"explore {attribute}: cohorts equal", f"{attribute}:{EQUAL}"
    version = _version(study, pooled, label, key, make_up | {"value": EQUAL}, _counts(sub, pooled))
    if version is None:
        return CohortFit(EQUAL, None, None, None)
    started, read = time.perf_counter(), study.space.vectors
    bound = learning.explore_max_eigenvalue
    try:
        model = _equal_fit(sub, read, sub_codes, bound)
        recipe = equal_recipe(read, sub_codes, bound)
        new_items, folds = newitems.new_items_check(
            sub, read, recipe, control_only=control_only(study.strategy)
        )
        diagnostics = {
            "loglik": fitting.finite(model.loglik_),
            "converged": bool(model.converged_),
            "penalty": fitting.finite(model.alpha_),
            "prior": "identity",
            "weighting": "cohorts equal (a weight per cohort: n / (K n_c))",
            "warnings": list(model.warnings_),
        }
        params = {"max_eigenvalue": bound, "random_state": 0, "prior": "identity"}
        _store(version, model.sigma_, params, diagnostics, new_items, folds, sub, started)
    except Exception as error:  # noqa: BLE001
        storage.version_fail(version, f"{type(error).__name__}: {error}", transient=False)
        return CohortFit(EQUAL, None, None, None)
    version.refresh_from_db()
    return CohortFit(EQUAL, version, folds, model.sigma_)
