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

Diagnostics use a fixed validation split by a hash of the *pair* (not of the judgment), so every
answer to a pair falls on the same side and held-out pairs are truly unseen. The stored Sigma is
fitted on all observations; a second fit on the training side gives the train and held-out
log-likelihood and the held-out AUC of ``predict_proba``. Storing the Sigma is
:mod:`learning.versions`' job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import roc_auc_score

from annotation.models import LabelCode
from learning.core.explore import EXPLORE, ExploreShortfall, explore_shortfall
from learning.core.face import FACE
from learning.core.psd import eigh_descending
from learning.selectors import GroupSnapshot, JudgmentSnapshot

UNSURE = LabelCode.UNSURE


@dataclass(frozen=True)
class PairData:
    """EXPLORE observations as row indices into the embedding matrix."""

    row_a: np.ndarray
    row_b: np.ndarray
    y: np.ndarray  # float: 1 comparable, 0 incomparable, 0.5 unsure under "all"
    held_out: np.ndarray  # bool, fixed by the pair's hash

    def __len__(self) -> int:
        return int(self.y.size)


@dataclass
class FitOutcome:
    sigma: np.ndarray
    parameters: dict
    diagnostics: dict = field(default_factory=dict)


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


def pair_data(snapshot: JudgmentSnapshot, *, policy: str, validation_share: float) -> PairData:
    """Observations for EXPLORE under the repeat-answer policy (vectorised)."""
    label = snapshot.label
    if policy == "majority":
        keep = label != UNSURE
        a, b, lab = snapshot.item_a[keep], snapshot.item_b[keep], label[keep]
        ra, rb = snapshot.row_a[keep], snapshot.row_b[keep]
        keys = np.stack([a, b], axis=1)
        unique, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        yes = np.bincount(inverse, weights=(lab == 1), minlength=len(unique))
        no = np.bincount(inverse, weights=(lab == 0), minlength=len(unique))
        decided = yes != no
        item_a, item_b = unique[decided, 0], unique[decided, 1]
        row_a, row_b = ra[first][decided], rb[first][decided]
        y = (yes[decided] > no[decided]).astype(np.float64)
    else:
        keep = label != UNSURE if policy == "drop_unsure" else np.ones(label.size, dtype=bool)
        item_a, item_b = snapshot.item_a[keep], snapshot.item_b[keep]
        row_a, row_b = snapshot.row_a[keep], snapshot.row_b[keep]
        y = np.where(label[keep] == UNSURE, 0.5, label[keep].astype(np.float64))
    held_out = pair_hash_unit(item_a, item_b) < validation_share
    return PairData(row_a=row_a, row_b=row_b, y=y, held_out=held_out)


def counts_of(snapshot: JudgmentSnapshot, groups: GroupSnapshot, pairs: PairData) -> dict:
    labels = np.bincount(snapshot.label, minlength=3)
    annotators = np.unique(snapshot.annotator[snapshot.annotator >= 0])
    return {
        "judgments": len(snapshot),
        "comparable": int(labels[1]),
        "incomparable": int(labels[0]),
        "unsure": int(labels[2]),
        "pairs_distinct": int(
            np.unique(np.stack([snapshot.item_a, snapshot.item_b]), axis=1).shape[1]
        )
        if len(snapshot)
        else 0,
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
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def _spectrum(sigma: np.ndarray) -> list[float]:
    return [float(v) for v in eigh_descending(sigma)[0]]


def explore_shortfall_of(labels: np.ndarray) -> ExploreShortfall:
    """What EXPLORE still lacks, from labels (1 comparable, 0 incomparable; others ignored)."""
    return explore_shortfall(labels[(labels == 0) | (labels == 1)])


def _mean_interval(values: np.ndarray) -> list[float | None]:
    """95 % normal interval of a mean (per-pair values; None with fewer than two)."""
    if values.size < 2:
        return [None, None]
    half = 1.96 * float(np.std(values, ddof=1)) / np.sqrt(values.size)
    mean = float(np.mean(values))
    return [finite(mean - half), finite(mean + half)]


def fit_explore(
    pairs: PairData,
    read_vectors,
    *,
    max_eigenvalue: float | None,
    prior: np.ndarray | None = None,
    prior_name: str = "identity",
) -> FitOutcome:
    """EXPLORE on all observations, plus a train-side fit (at the chosen penalty) for held-out
    diagnostics: log-likelihood with its 95 % interval and AUC on the pairs held out by hash.

    ``prior``: the metric outside the span of the observed differences (the study's FACE Sigma
    when it has one, else a scaled identity; docs/core.md).
    """
    shortfall = explore_shortfall_of(pairs.y)
    if not shortfall.ok:
        raise FitError(shortfall.message)
    rows, (ia, ib) = _local_index(pairs.row_a, pairs.row_b)
    vectors = read_vectors(rows)
    x1, x2 = vectors[ia], vectors[ib]
    params = {
        "max_eigenvalue": None if max_eigenvalue is None else float(max_eigenvalue),
        "random_state": 0,
    }
    model = EXPLORE(**params, prior=prior).fit(x1, x2, pairs.y)
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
        "penalty_path": [[finite(a), finite(b)] for a, b in model.alpha_path_],
        "bound_active": bool(model.bound_active_),
        "warnings": list(model.warnings_),
    }
    train = ~pairs.held_out
    held = pairs.held_out
    if train.any() and held.any() and explore_shortfall_of(pairs.y[train]).ok:
        check = EXPLORE(**params, prior=prior, alpha=model.alpha_).fit(
            x1[train], x2[train], pairs.y[train]
        )
        per_pair = check.score_samples(x1[held], x2[held], pairs.y[held])
        diagnostics |= {
            "train_loglik": finite(check.score(x1[train], x2[train], pairs.y[train])),
            "heldout_loglik": finite(per_pair.mean()),
            "heldout_loglik_ci": _mean_interval(per_pair),
            "heldout_pairs": int(per_pair.size),
            "heldout_auc": _auc(pairs.y[held], check.predict_proba(x1[held], x2[held])),
        }
    params["prior"] = prior_name
    return FitOutcome(sigma=model.sigma_, parameters=params, diagnostics=diagnostics)


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
        distance = np.einsum("ij,jk,ik->i", z, check.sigma_, z)
        diagnostics["heldout_auc"] = _auc(pairs.y[held], -distance)
    return FitOutcome(
        sigma=model.sigma_,
        parameters={"n_components": k_param, "n_components_fitted": int(model.n_components_)},
        diagnostics=diagnostics,
    )
