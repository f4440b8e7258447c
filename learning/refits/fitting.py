"""From a data snapshot to fitted Sigmas with diagnostics (EXPLORE and FACE).

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

import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import roc_auc_score

from annotation.models import LabelCode
from learning.core.explore import (
    EXPLORE,
    MIN_ANSWERS,
    N_FOLDS,
    ExploreShortfall,
    explore_shortfall,
    kfold_validation,
)
from learning.core.face import FACE
from learning.core.psd import eigh_descending
from learning.core.reliability import ReliableEXPLORE
from learning.refits import cache
from learning.refits.cache import WarmStart
from learning.refits.snapshots import GroupSnapshot, JudgmentSnapshot

UNSURE = LabelCode.UNSURE


@dataclass(frozen=True)
class PairData:
    """EXPLORE observations as row indices into the embedding matrix."""

    row_a: np.ndarray
    row_b: np.ndarray
    y: np.ndarray  # float: 1 comparable, 0 incomparable, 0.5 unsure under "all"
    held_out: np.ndarray  # bool, fixed by the pair's hash
    hash: np.ndarray  # the pair's hash in [0, 1) (validation folds)
    # Per observation when each is one answer (not under "majority"): who gave it (-1:
    # imported), the pair (an index shared by the answers to one pair) and the gold truth
    # (1/0; NaN when the pair is not gold). None under "majority".
    annotator: np.ndarray | None = None
    pair: np.ndarray | None = None
    gold: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.y.size)


@dataclass
class FitOutcome:
    sigma: np.ndarray
    parameters: dict
    diagnostics: dict = field(default_factory=dict)
    warm: WarmStart | None = None  # where the next refit's fit may start (EXPLORE)


class FitError(ValueError):
    """The data cannot be fitted (one class only, too little data); stored on the version."""


def pair_hash_unit(item_a: np.ndarray, item_b: np.ndarray) -> np.ndarray:
    """A fixed pseudo-random number in [0, 1) per pair (splitmix64 of the item ids)."""
    with np.errstate(over="ignore"):
        z = item_a.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + item_b.astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _pair_keys(item_a: np.ndarray, item_b: np.ndarray) -> np.ndarray:
    """One int64 per pair, ordered as the pairs (a, b) lexicographically (ids ≥ 0): a 1-D
    ``np.unique`` of these is many times faster than ``np.unique(..., axis=0)`` of the rows."""
    top = int(max(item_a.max(initial=0), item_b.max(initial=0))) + 1
    return item_a.astype(np.int64) * top + item_b.astype(np.int64)


def pair_data(snapshot: JudgmentSnapshot, *, policy: str, validation_share: float) -> PairData:
    """Observations for EXPLORE under the repeat-answer policy (vectorised)."""
    label = snapshot.label
    if policy == "majority":
        keep = label != UNSURE
        a, b, lab = snapshot.item_a[keep], snapshot.item_b[keep], label[keep]
        ra, rb = snapshot.row_a[keep], snapshot.row_b[keep]
        _, first, inverse = np.unique(_pair_keys(a, b), return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        yes = np.bincount(inverse, weights=(lab == 1), minlength=first.size)
        no = np.bincount(inverse, weights=(lab == 0), minlength=first.size)
        decided = yes != no
        item_a, item_b = a[first][decided], b[first][decided]
        row_a, row_b = ra[first][decided], rb[first][decided]
        y = (yes[decided] > no[decided]).astype(np.float64)
        unit = pair_hash_unit(item_a, item_b)
        return PairData(row_a=row_a, row_b=row_b, y=y, held_out=unit < validation_share, hash=unit)
    keep = label != UNSURE if policy == "drop_unsure" else np.ones(label.size, dtype=bool)
    item_a, item_b = snapshot.item_a[keep], snapshot.item_b[keep]
    row_a, row_b = snapshot.row_a[keep], snapshot.row_b[keep]
    y = np.where(label[keep] == UNSURE, 0.5, label[keep].astype(np.float64))
    unit = pair_hash_unit(item_a, item_b)
    gold = np.full(y.size, np.nan)
    if snapshot.gold is not None:
        code = snapshot.gold[keep]
        gold[(code == 0) | (code == 1)] = code[(code == 0) | (code == 1)]
    if y.size:
        pair = np.unique(_pair_keys(item_a, item_b), return_inverse=True)[1]
    else:
        pair = np.empty(0, dtype=np.int64)
    return PairData(
        row_a=row_a,
        row_b=row_b,
        y=y,
        held_out=unit < validation_share,
        hash=unit,
        annotator=snapshot.annotator[keep],
        pair=pair.ravel(),
        gold=gold,
    )


def counts_of(snapshot: JudgmentSnapshot, groups: GroupSnapshot, pairs: PairData) -> dict:
    labels = np.bincount(snapshot.label, minlength=3)
    annotators = np.unique(snapshot.annotator[snapshot.annotator >= 0])
    return {
        "judgments": len(snapshot),
        "comparable": int(labels[1]),
        "incomparable": int(labels[0]),
        "unsure": int(labels[2]),
        "pairs_distinct": int(np.unique(_pair_keys(snapshot.item_a, snapshot.item_b)).size),
        "observations": len(pairs),
        "held_out": int(pairs.held_out.sum()),
        "groups": len(groups.rows),
        "annotators": int(annotators.size),
        "imported": int((snapshot.annotator < 0).sum()),
    }


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
    objective is better (the same stopping rule; ``diagnostics["warm_start"]`` says so)."""
    shortfall = explore_shortfall_of(pairs.y)
    if not shortfall.ok:
        raise FitError(shortfall.message)
    # once for both fits, and extended from the last refit's when its pairs are a prefix
    z, built = cache.differences_for(read_vectors, pairs.row_a, pairs.row_b)
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


def face_groups(
    pairs: PairData, groups: GroupSnapshot, *, use_pairs: bool, train_only: bool
) -> tuple[list[np.ndarray], np.ndarray]:
    """FACE input as row indices: the curated groups, and comparable pairs as a (G, 2) array."""
    if not use_pairs:
        return list(groups.rows), np.empty((0, 2), dtype=np.int64)
    keep = pairs.y == 1
    if train_only:
        keep &= ~pairs.held_out
    return list(groups.rows), np.stack([pairs.row_a[keep], pairs.row_b[keep]], axis=1)


def _fit_face(curated: list[np.ndarray], pair_rows: np.ndarray, read_vectors, k):
    parts = [*curated, pair_rows.ravel()]
    rows, (flat,) = _local_index(np.concatenate(parts))
    vectors = read_vectors(rows)
    if curated:
        sizes = [g.size for g in curated] + [2] * len(pair_rows)
        local = np.split(flat, np.cumsum(sizes)[:-1])
    else:  # pairs only: FACE takes them as one (G, 2) array, no Python list of groups
        local = flat.reshape(-1, 2)
    if k != "auto" and int(k) >= vectors.shape[1]:
        raise FitError(
            f"FACE k = {k} must be smaller than the space's dimension {vectors.shape[1]} "
            "(k = d would remove every direction); lower it in the study's learning settings"
        )
    return FACE(n_components=k).fit(vectors, local)


def face_prior(
    pairs: PairData, groups: GroupSnapshot, read_vectors, *, k: int | None, keep: np.ndarray
) -> np.ndarray:
    """EXPLORE's prior from FACE: the curated groups and the pairs judged comparable among
    ``keep`` (a fold's training part, for the fits that score the rest: issue 25). The identity
    when FACE cannot be fitted there."""
    rows = np.flatnonzero(keep & (pairs.y == 1))
    pair_rows = np.stack([pairs.row_a[rows], pairs.row_b[rows]], axis=1)
    try:
        with warnings.catch_warnings():  # a fold's few pairs: FACE's rank notes are not news
            warnings.simplefilter("ignore", UserWarning)
            return _fit_face(list(groups.rows), pair_rows, read_vectors, k or "auto").sigma_
    except (FitError, ValueError):  # nothing to learn from, or k too large for these groups
        return np.eye(read_vectors(np.array([pairs.row_a[0]])).shape[1])


def fit_face(
    pairs: PairData, groups: GroupSnapshot, read_vectors, *, k: int | None, use_pairs: bool
) -> FitOutcome:
    """FACE on all groups; AUC of its distance on held-out labelled pairs when there are any."""
    curated, pair_rows = face_groups(pairs, groups, use_pairs=use_pairs, train_only=False)
    if not curated and not len(pair_rows):
        raise FitError("FACE needs at least one comparable group or pair judged comparable")
    k_param = "auto" if k is None else int(k)
    model = _fit_face(curated, pair_rows, read_vectors, k_param)
    diagnostics = {
        "n_components": int(model.n_components_),
        "singular_values": [float(v) for v in model.singular_values_],
        "explained_variance_ratio": [float(v) for v in model.explained_variance_ratio_],
        "heterogeneity": finite(model.heterogeneity_),
        "spectrum": [float(v) for v in model.spectrum_],  # of the within-group scatter
        "groups_used": int(model.n_groups_),
    }
    held = pairs.held_out & ((pairs.y == 0) | (pairs.y == 1))
    train_curated, train_pairs = face_groups(pairs, groups, use_pairs=use_pairs, train_only=True)
    if held.any() and (train_curated or len(train_pairs)):
        check = _fit_face(train_curated, train_pairs, read_vectors, k_param)
        rows, (ia, ib) = _local_index(pairs.row_a[held], pairs.row_b[held])
        vectors = read_vectors(rows)
        z = vectors[ia] - vectors[ib]
        distance = np.einsum("ij,ij->i", z @ check.sigma_, z)
        diagnostics["heldout_auc"] = _auc(pairs.y[held], -distance)
    return FitOutcome(
        sigma=model.sigma_,
        parameters={"n_components": k_param, "n_components_fitted": int(model.n_components_)},
        diagnostics=diagnostics,
    )
