"""From a data snapshot to fitted Sigmas with diagnostics: EXPLORE here, its observations in
:mod:`learning.refits.pairs`, FACE in :mod:`learning.refits.face_fits`.

Repeated answers to a pair follow the study's policy (``StudyLearningSettings.RepeatPolicy``):

* ``all``: every answer is one observation; an "unsure" answer counts as half an observation
  each way (the label y = 1/2, i.e. the average of the comparable and incomparable terms of
  the likelihood). EXPLORE's likelihood is robust to such label noise.
* ``majority``: one observation per pair, the majority of its comparable/incomparable answers;
  ties and pairs with only "unsure" answers are dropped.
* ``drop_unsure``: every comparable/incomparable answer is one observation; "unsure" dropped.

FACE uses the study's comparable groups and, when ``face_pairs_as_groups`` is on, every pair
the policy resolves as comparable as a group of two (the paper's pairs-as-groups reading; under
``all`` an unsure answer is not a comparable pair for FACE).

Diagnostics use validation folds by a hash of the *pair* (not of the judgment), so every answer
to a pair falls on the same side and held-out pairs are truly unseen: EXPLORE chooses its penalty
on those folds and its fold fits give the held-out log-likelihood (with its interval) and AUC,
so a refit costs the penalty choice plus one fit (``explore_folds``). The stored Sigma is
fitted on all observations (stored by :mod:`learning.versions.storage`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import roc_auc_score

from learning.core.explore import (
    EXPLORE,
    MIN_ANSWERS,
    N_FOLDS,
    ExploreShortfall,
    explore_shortfall,
    kfold_validation,
)
from learning.core.psd import eigh_descending
from learning.core.reliability import ReliableEXPLORE
from learning.refits import cache
from learning.refits.cache import WarmStart
from learning.refits.drift_promise import drift_promise
from learning.refits.pairs import PairData


@dataclass
class FitOutcome:
    sigma: np.ndarray
    parameters: dict
    diagnostics: dict = field(default_factory=dict)
    warm: WarmStart | None = None  # where the next refit's fit may start (EXPLORE)


class FitError(ValueError):
    """The data cannot be fitted (one class only, too little data); stored on the version."""


def _local_index(*row_arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Unique matrix rows to read once, and each input re-expressed as indices into them."""
    unique = np.unique(np.concatenate([r.ravel() for r in row_arrays])) if row_arrays else []
    return np.asarray(unique, dtype=np.int64), [np.searchsorted(unique, r) for r in row_arrays]


def _auc(y: np.ndarray, score: np.ndarray) -> float | None:
    binary = (y == 0) | (y == 1)
    if binary.sum() < 2 or np.unique(y[binary]).size < 2:
        return None
    return float(roc_auc_score(y[binary], score[binary]))


def finite(value) -> float | None:
    """A float for JSON, None when missing or not finite (JSON has no inf/nan)."""
    value = None if value is None else float(value)
    return value if value is not None and np.isfinite(value) else None


def _spectrum(sigma: np.ndarray) -> list[float]:
    return [float(v) for v in eigh_descending(sigma)[0]]


def explore_shortfall_of(labels: np.ndarray) -> ExploreShortfall:
    """What EXPLORE still lacks, from labels (1 comparable, 0 incomparable; others ignored)."""
    return explore_shortfall(labels[(labels == 0) | (labels == 1)])


def explore_folds(pairs: PairData, dim: int) -> np.ndarray | None:
    """Validation folds for EXPLORE by the pair's hash, so every answer to a pair falls in one
    fold: ``N_FOLDS`` folds where EXPLORE's own rule (``kfold_validation``, on the observations
    and the dimension ``dim``) would use them, else the study's held-out share as one split
    (fold 0; -1 never held out). None when some training side would lack a label (EXPLORE then
    uses its own stratified folds)."""
    if kfold_validation(len(pairs), dim):
        fold = np.minimum((pairs.hash * N_FOLDS).astype(np.int64), N_FOLDS - 1)
    else:
        fold = np.where(pairs.held_out, 0, -1)
    for f in np.unique(fold[fold >= 0]):
        if not explore_shortfall_of(pairs.y[fold != f]).ok:
            return None
    return fold if np.any(fold >= 0) else None


def fit_explore(
    pairs: PairData,
    read_vectors,
    *,
    max_eigenvalue: float | None,
    prior: np.ndarray | None = None,
    prior_name: str = "identity",
    weight_by_reliability: bool = False,
    warm: WarmStart | None = None,
    fold_prior=None,
    keep_differences: bool = True,
    promise: bool = True,
) -> FitOutcome:
    """EXPLORE on all observations, with held-out diagnostics from the fits it makes anyway to
    choose its penalty (folds by pair hash, ``explore_folds``): log-likelihood with its 95 %
    interval and AUC of the held-out pairs, each scored by a fit that did not see it.

    ``prior``: the metric outside the span of the observed differences (the study's FACE Sigma
    when it has one, else a scaled identity; docs/core.md). ``fold_prior(keep)``: the prior from
    the observations ``keep`` only, when ``prior`` was learned from them (FACE on the pairs judged
    comparable): each fold's fits shrink toward a prior that never saw the pairs they score.

    ``weight_by_reliability``: answers weighted by their annotator's estimated reliability
    (``learning.core.reliability``: flip rates by EM jointly with Sigma, EXPLORE on the soft
    labels) when every observation is one answer (not under the "majority" policy) and at least
    two annotators answered; imported answers count as one more annotator. The diagnostics say
    which weighting was used (``weighting``) and list each annotator's flip rate.

    ``warm``: the previous refit's ``FitOutcome.warm``: each fit starts from it when its
    objective is better (the same stopping rule; ``diagnostics["warm_start"]`` says so).
    ``keep_differences``: False for a fit on part of the pairs (the new-items check's fold fits,
    ``learning/refits/newitems.py``): the worker's kept differences stay the study's.
    ``promise``: False for a fit that is never stored as a version (a fold fit, a bootstrap
    refit): no ``drift_promise`` (what its held-out answers promise a later drift check)."""
    shortfall = explore_shortfall_of(pairs.y)
    if not shortfall.ok:
        raise FitError(shortfall.message)
    # once for both fits, and extended from the last refit's when its pairs are a prefix
    if keep_differences:
        z, built = cache.differences_for(read_vectors, pairs.row_a, pairs.row_b)
    else:
        z, built = cache.differences_once(read_vectors, pairs.row_a, pairs.row_b), "built"

    params = {
        "max_eigenvalue": None if max_eigenvalue is None else float(max_eigenvalue),
        "random_state": 0,
    }
    folds = explore_folds(pairs, z.shape[1])
    fold_priors = None
    if fold_prior is not None and folds is not None:
        fold_priors = [fold_prior(folds != f) for f in np.unique(folds[folds >= 0])]
    weighting = _weighting(pairs, weight_by_reliability)
    # With the EM's previous solution to start from, the plain fit on all pairs would be used for
    # nothing: only its penalty choice and held-out figures (the fold fits) are needed.
    em_warm = None if warm is None or weighting != "reliability" else warm.reliability
    start = None if warm is None else warm.explore
    plain = EXPLORE(**params, prior=prior, warm_start=start, refit=em_warm is None)
    plain.fit_differences(z, pairs.y, validation=folds, validation_priors=fold_priors)
    model, kept = plain, WarmStart(plain.warm_state_)
    if weighting == "reliability":  # the EM reuses the plain fit and its penalty
        extra = {"pair": pairs.pair, "gold": pairs.gold, "plain": plain, "warm": em_warm}
        reliable = ReliableEXPLORE(explore_params=params | {"prior": prior})
        reliable.fit_differences(z, pairs.y, pairs.annotator, **extra)
        model, kept = reliable.explore_, WarmStart(plain.warm_state_, reliable.warm_state_)
    diagnostics = {
        "loglik": finite(model.loglik_),
        "iterations": int(model.n_iter_),
        "converged": bool(model.converged_),
        "projected_gradient_norm": finite(model.projected_gradient_norm_),
        "max_eigenvalue_bound": finite(model.max_eigenvalue_),
        "spectrum": _spectrum(model.sigma_),
        "n_constrained": int(model.n_constrained_),
        "prior": prior_name,
        "prior_scale": finite(model.prior_scale_),
        "penalty": finite(model.alpha_),
        "penalty_path": [[finite(a), finite(b)] for a, b in plain.alpha_path_],
        "bound_active": bool(model.bound_active_),
        "warnings": list(model.warnings_),
        "weighting": weighting,
        "warm_start": warm is not None,
        "differences": built,
    }
    if weighting == "reliability":
        rel = reliable.reliability_
        diagnostics["reliability"] = [
            {
                "annotator": int(a),
                "answers": int(n),
                "flip_rate": finite(e),
                "interval": [finite(lo), finite(hi)],
            }
            for a, n, e, (lo, hi) in zip(
                rel.annotator, rel.n_answers, rel.flip_rate, rel.interval, strict=True
            )
        ]
        diagnostics["reliability_iterations"] = int(reliable.n_iter_)
    held = np.isfinite(plain.heldout_distances_)
    if held.any():
        distance = plain.heldout_distances_[held]
        diagnostics |= {
            "heldout_loglik": finite(plain.heldout_loglik_),
            "heldout_loglik_ci": [finite(v) for v in plain.heldout_loglik_ci_],
            "heldout_pairs": int(plain.heldout_n_),
            "heldout_folds": "pair hash" if folds is not None else "stratified",
            "heldout_fit": "unweighted",  # the folds are the penalty choice's, unweighted
            "heldout_auc": _auc(pairs.y[held], -distance),
            # Paired comparisons on the same held-out pairs (learning/evaluation/informative.py)
            "heldout_baselines": {
                name: {
                    "loglik": finite(b["loglik"]),
                    "gain": finite(b["gain"]),
                    "gain_ci": [finite(v) for v in b["gain_ci"]],
                }
                for name, b in plain.heldout_baselines_.items()
            },
        }
    if promise:
        diagnostics["drift_promise"] = drift_promise(
            z,
            pairs,
            folds,
            plain,
            reliable if weighting == "reliability" else None,
            params | {"prior": prior},
            fold_priors,
        )
    params["prior"] = prior_name
    return FitOutcome(model.sigma_, params, diagnostics, warm=kept)


def _weighting(pairs: PairData, wanted: bool) -> str:
    """ "reliability" when answers can be weighted, else why not (stored on the version)."""
    if not wanted:
        return "none"
    if pairs.annotator is None:
        return "none (majority policy: one observation per pair)"
    if np.unique(pairs.annotator).size < 2:
        return "none (one annotator)"
    if int(pairs.pair.max(initial=-1)) + 1 < MIN_ANSWERS:  # the EM fits one per pair (0..m-1)
        return f"none (fewer than {MIN_ANSWERS} distinct pairs)"
    return "reliability"
