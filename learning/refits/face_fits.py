"""A refit's FACE fits: the study's FACE version (``fit_face``) and EXPLORE's prior from FACE
(``face_prior``).

FACE uses the study's comparable groups and, when ``face_pairs_as_groups`` is on, every pair
the policy resolves as comparable as a group of two (the paper's pairs-as-groups reading; under
``all`` an unsure answer is not a comparable pair for FACE).

A pair's within-group scatter is ``zzᵀ/2`` (``z`` the difference of its two rows) and the
scatter of a set of groups is the sum of theirs (``learning/core/face.py: FACE.fit_scatter``).
``PairScatter`` keeps those sums per class of pairs — the validation fold of the pair's hash
(``learning.core.explore.N_FOLDS`` folds) and its held-out side — and is extended by a refit's
new answers (``learning/refits/increments.py``): every fit here whose pairs are a union of
classes (all pairs, the training side, a fold's training part) adds up to ten d × d matrices
instead of passing over every pair again; any other selection takes the direct path. The
results equal ``FACE.fit`` on the same groups up to rounding (tests/learning/refits/
test_increments.py).
"""

from __future__ import annotations

import warnings

import numpy as np

from learning.core.explore import N_FOLDS
from learning.core.face import FACE, within_group_scatter
from learning.refits.fitting import FitError, FitOutcome, _auc, _local_index, finite
from learning.refits.pairs import PairData
from learning.refits.snapshots import GroupSnapshot

N_CLASSES = 2 * N_FOLDS
CHUNK = 1 << 16  # pairs per block of differences


def pair_class(hash_unit: np.ndarray, held_out: np.ndarray) -> np.ndarray:
    """A pair's class: its hash's fold (as ``learning/refits/fitting.py: explore_folds``) and
    its held-out side."""
    fold = np.minimum((hash_unit * N_FOLDS).astype(np.int64), N_FOLDS - 1)
    return (2 * fold + held_out).astype(np.int8)


class PairScatter:
    """``Σ zzᵀ/2`` of the pairs judged comparable (y = 1) per class, over the first ``rows``
    observations of a study's ``PairData`` (which only grows by appending while this lives)."""

    def __init__(self, dimension: int) -> None:
        self.sums = np.zeros((N_CLASSES, dimension, dimension))
        self.counts = np.zeros(N_CLASSES, dtype=np.int64)
        self.rows = 0
        self.classes = np.empty(0, dtype=np.int8)

    def extend(self, pairs: PairData, read_vectors) -> None:
        """Add the observations after ``rows`` (one pass over them; all or nothing)."""
        if len(pairs) < self.rows:
            raise ValueError("PairScatter: the observations shrank")
        new = slice(self.rows, len(pairs))
        classes = pair_class(pairs.hash[new], pairs.held_out[new])
        comparable = np.flatnonzero(pairs.y[new] == 1)
        sums, counts = self.sums.copy(), self.counts.copy()
        for start in range(0, comparable.size, CHUNK):
            part = comparable[start : start + CHUNK]
            rows, (ia, ib) = _local_index(pairs.row_a[new][part], pairs.row_b[new][part])
            vectors = read_vectors(rows)
            z, of = vectors[ia] - vectors[ib], classes[part]
            for c in np.unique(of):
                zc = z[of == c]
                sums[c] += zc.T @ zc / 2.0
                counts[c] += zc.shape[0]
        self.sums, self.counts = sums, counts
        self.classes = np.concatenate([self.classes, classes])
        self.rows = len(pairs)

    def of(self, pairs: PairData, keep: np.ndarray) -> tuple[np.ndarray, int] | None:
        """The scatter and number of the comparable pairs among ``keep`` when they are a union
        of classes, else None."""
        if self.rows != len(pairs):
            return None
        comparable = pairs.y == 1
        inside = np.bincount(
            self.classes[comparable], weights=keep[comparable], minlength=N_CLASSES
        ).astype(np.int64)
        if np.any((inside != 0) & (inside != self.counts)):
            return None
        chosen = (inside == self.counts) & (self.counts > 0)
        return self.sums[chosen].sum(axis=0), int(self.counts[chosen].sum())


def _summed(scatter: PairScatter | None, pairs: PairData, read_vectors, keep: np.ndarray):
    """``scatter.of(pairs, keep)`` once it covers ``pairs`` (None: the direct path)."""
    if scatter is None or scatter.rows > len(pairs):  # (sums of a later refit's pairs)
        return None
    scatter.extend(pairs, read_vectors)
    return scatter.of(pairs, keep)


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


def _check_k(k, d: int) -> None:
    if k != "auto" and int(k) >= d:
        raise FitError(
            f"FACE k = {k} must be smaller than the space's dimension {d} "
            "(k = d would remove every direction); lower it in the study's learning settings"
        )


def _fit_face(curated: list[np.ndarray], pair_rows: np.ndarray, read_vectors, k):
    parts = [*curated, pair_rows.ravel()]
    rows, (flat,) = _local_index(np.concatenate(parts))
    vectors = read_vectors(rows)
    if curated:
        sizes = [g.size for g in curated] + [2] * len(pair_rows)
        local = np.split(flat, np.cumsum(sizes)[:-1])
    else:  # pairs only: FACE takes them as one (G, 2) array, no Python list of groups
        local = flat.reshape(-1, 2)
    _check_k(k, vectors.shape[1])
    return FACE(n_components=k).fit(vectors, local)


def _fit_summed(curated: list[np.ndarray], summed: tuple[np.ndarray, int], read_vectors, k):
    """FACE on the curated groups plus pairs already summed (``PairScatter.of``)."""
    scatter, n_pairs = summed
    scatter, n_rows = scatter.copy(), 2 * n_pairs
    if curated:
        sizes = np.asarray([g.size for g in curated], dtype=np.int64)
        rows, (flat,) = _local_index(np.concatenate(curated))
        scatter += within_group_scatter(read_vectors(rows), flat, sizes)
        n_rows += int(sizes.sum())
    _check_k(k, scatter.shape[0])
    model = FACE(n_components=k)
    return model.fit_scatter(scatter, n_groups=len(curated) + n_pairs, n_rows=n_rows)


def face_prior(
    pairs: PairData,
    groups: GroupSnapshot,
    read_vectors,
    *,
    k: int | None,
    keep: np.ndarray,
    scatter: PairScatter | None = None,
) -> np.ndarray:
    """EXPLORE's prior from FACE: the curated groups and the pairs judged comparable among
    ``keep`` (a fold's training part, for the fits that score the rest: issue 25). The identity
    when FACE cannot be fitted there. ``scatter``: the pairs' sums (module docstring)."""
    summed = _summed(scatter, pairs, read_vectors, keep)
    try:
        with warnings.catch_warnings():  # a fold's few pairs: FACE's rank notes are not news
            warnings.simplefilter("ignore", UserWarning)
            if summed is not None:
                return _fit_summed(list(groups.rows), summed, read_vectors, k or "auto").sigma_
            rows = np.flatnonzero(keep & (pairs.y == 1))
            pair_rows = np.stack([pairs.row_a[rows], pairs.row_b[rows]], axis=1)
            return _fit_face(list(groups.rows), pair_rows, read_vectors, k or "auto").sigma_
    except (FitError, ValueError):  # nothing to learn from, or k too large for these groups
        return np.eye(read_vectors(np.array([pairs.row_a[0]])).shape[1])


def fit_face(
    pairs: PairData,
    groups: GroupSnapshot,
    read_vectors,
    *,
    k: int | None,
    use_pairs: bool,
    scatter: PairScatter | None = None,
) -> FitOutcome:
    """FACE on all groups; AUC of its distance on held-out labelled pairs when there are any.
    ``scatter``: the pairs' sums (module docstring), used when ``use_pairs``."""
    curated, pair_rows = face_groups(pairs, groups, use_pairs=use_pairs, train_only=False)
    if not curated and not len(pair_rows):
        raise FitError("FACE needs at least one comparable group or pair judged comparable")
    k_param = "auto" if k is None else int(k)
    whole = train = None
    if use_pairs:
        whole = _summed(scatter, pairs, read_vectors, np.ones(len(pairs), dtype=bool))
        train = _summed(scatter, pairs, read_vectors, ~pairs.held_out)
    if whole is not None:
        model = _fit_summed(curated, whole, read_vectors, k_param)
    else:
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
        if train is not None:
            check = _fit_summed(train_curated, train, read_vectors, k_param)
        else:
            check = _fit_face(train_curated, train_pairs, read_vectors, k_param)
        rows, (ia, ib) = _local_index(pairs.row_a[held], pairs.row_b[held])
        vectors = read_vectors(rows)
        z = vectors[ia] - vectors[ib]  # zᵀΣz with Σ = I - QᵀQ: |z|² - |Qz|² (k rather than d)
        distance = np.einsum("ij,ij->i", z, z) - np.sum((z @ check.components_.T) ** 2, axis=1)
        diagnostics["heldout_auc"] = _auc(pairs.y[held], -distance)
    return FitOutcome(
        sigma=model.sigma_,
        parameters={"n_components": k_param, "n_components_fitted": int(model.n_components_)},
        diagnostics=diagnostics,
    )
