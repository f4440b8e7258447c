"""Input checks of the estimators: matrices (shared by FACE and EXPLORE), FACE's groups, and
EXPLORE's labels, pair weights, validation folds and parameters.

Each check raises ``ValueError`` with a message naming the argument and the problem, so that
FACE and EXPLORE refuse the same bad matrix with the same words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._pairloss import PairDifferences

N_FOLDS = 5
VALIDATION_FRACTION = 0.2


def check_matrix(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a real, non-empty 2-D array, in its own dtype (finiteness: ``check_finite``)."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, d), got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise ValueError(f"{name} must be real-valued")
    return a


def check_finite(a: np.ndarray, name: str, note: str = "") -> None:
    """Refuse NaN and inf anywhere in ``a`` (via its min and max: no n×d temporary)."""
    if not (np.isfinite(a.min()) and np.isfinite(a.max())):  # NaN propagates through both
        raise ValueError(f"{name} contains NaN or inf" + (f" ({note})" if note else ""))


def check_float_matrix(x: ArrayLike, name: str) -> np.ndarray:
    """``check_matrix``, then float64 and finite."""
    a = check_matrix(x, name).astype(np.float64, copy=False)
    check_finite(a, name)
    return a


def check_pairs(z: object) -> np.ndarray | PairDifferences:
    """EXPLORE's differences: a finite float64 matrix, or ``PairDifferences`` (its item matrix
    finite, its indices within it: the pairs are built chunk by chunk, never whole)."""
    if not isinstance(z, PairDifferences):
        return check_float_matrix(z, "Z")
    check_finite(check_matrix(z.x, "the item matrix"), "the item matrix")
    for side in (z.a, z.b):
        if side.ndim != 1 or side.size != z.a.size or side.size == 0:
            raise ValueError("PairDifferences needs two 1-D index vectors of one length")
        if not np.issubdtype(side.dtype, np.integer) or side.min() < 0 or side.max() >= len(z.x):
            raise ValueError(f"pair indices must be integers in [0, {len(z.x)})")
    return z


def differences(x1: ArrayLike, x2: ArrayLike) -> np.ndarray:
    """``X1 - X2`` for two finite matrices of one shape (float64)."""
    a, b = check_float_matrix(x1, "X1"), check_float_matrix(x2, "X2")
    if a.shape != b.shape:
        raise ValueError(f"X1 and X2 must have the same shape, got {a.shape} and {b.shape}")
    return a - b


def as_groups(groups: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """FACE's ``groups`` (index arrays, a (G, s) array or a label per row) flattened into (row
    indices, group sizes), rows of a group contiguous; ``check_groups`` checks the result."""
    if (
        isinstance(groups, np.ndarray)
        and groups.ndim == 1
        and groups.size == n
        and (np.issubdtype(groups.dtype, np.integer))
    ):
        labels = groups.astype(np.int64)
        if np.any(labels < -1):
            raise ValueError("group labels must be ≥ 0, or -1 for rows in no group")
        rows = np.flatnonzero(labels >= 0)
        order = np.argsort(labels[rows], kind="stable")
        rows = rows[order]
        _, sizes = np.unique(labels[rows], return_counts=True)
        if rows.size == 0:
            raise ValueError("no row has a group label (all labels are -1)")
        return rows, sizes.astype(np.int64)
    if isinstance(groups, np.ndarray) and groups.ndim == 2:
        arrays: Sequence = list(groups)
    elif isinstance(groups, (list, tuple)):
        arrays = groups
    else:
        raise ValueError(
            "groups must be a list of integer index arrays, a (G, s) integer array, "
            "or a 1-D integer label array of length n (-1: no group)"
        )
    if len(arrays) == 0:
        raise ValueError("groups is empty: FACE needs at least one group of two or more rows")
    try:
        sizes = np.fromiter((len(g) for g in arrays), dtype=np.int64, count=len(arrays))
        flat = np.concatenate(arrays) if sizes.sum() else np.zeros(0, np.int64)
    except (TypeError, ValueError) as exc:
        raise ValueError("each group must be a 1-D array of integer row indices") from exc
    if int(sizes.sum()) != flat.size or not (
        np.issubdtype(flat.dtype, np.integer) or flat.size == 0
    ):
        raise ValueError("each group must be a 1-D array of integer row indices")
    return flat.astype(np.int64, copy=False), sizes


def check_groups(rows: np.ndarray, sizes: np.ndarray, n: int) -> None:
    """Every group has at least two rows, indices lie in ``[0, n)``, no row repeats in a group."""
    if np.any(sizes < 2):
        bad = int(np.flatnonzero(sizes < 2)[0])
        raise ValueError(f"group {bad} has {int(sizes[bad])} row(s); every group needs at least 2")
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"group indices must lie in [0, {n}); got {rows.min()}..{rows.max()}")
    gid = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    key = np.sort(gid * n + rows)
    if np.any(np.diff(key) == 0):
        raise ValueError("a group lists the same row twice")


def check_labels(y: ArrayLike, n: int) -> np.ndarray:
    """EXPLORE's labels: ``n`` numbers in [0, 1] (1 comparable, 0 not), both classes present."""
    lab = np.asarray(y)
    if lab.ndim != 1 or lab.shape[0] != n:
        raise ValueError(f"y must be a 1-D array of length {n}, got shape {lab.shape}")
    if not (np.issubdtype(lab.dtype, np.number) or lab.dtype == bool):
        raise ValueError("y must be numeric (1 comparable, 0 incomparable)")
    lab = lab.astype(np.float64, copy=False)  # never written: the caller's float64 labels
    if not np.all(np.isfinite(lab)) or np.any((lab < 0) | (lab > 1)):
        raise ValueError("y must lie in [0, 1] (1 comparable, 0 incomparable, soft labels between)")
    if not (np.any(lab > 0) and np.any(lab < 1)):
        which = "comparable (y=1)" if np.all(lab == 1) else "incomparable (y=0)"
        raise ValueError(f"y has one class only (all pairs {which}); EXPLORE needs both")
    return lab


def check_weights(sample_weight: ArrayLike | None, n: int) -> np.ndarray:
    """Pair weights scaled to mean 1 (all 1 when None)."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight)
    if w.shape != (n,) or not (np.issubdtype(w.dtype, np.number) or w.dtype == bool):
        raise ValueError(f"sample_weight must be a 1-D numeric array of length {n}")
    w = w.astype(np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ValueError("sample_weight must be finite and ≥ 0, with at least one weight > 0")
    return w * (n / float(np.sum(w)))


def check_validation(
    validation: ArrayLike, y: np.ndarray, w: np.ndarray, shortfall: Callable[[np.ndarray], Any]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The caller's validation folds as (train rows, validation rows) pairs.

    A boolean mask holds out its True pairs (one split); an integer array gives each pair's
    fold (``-1``: never held out), as scikit-learn's ``PredefinedSplit``. Each training part's
    labels of weight > 0 must pass ``shortfall`` (EXPLORE's ``explore_shortfall``: a result with
    ``.ok`` and ``.message``).
    """
    a = np.asarray(validation)
    if a.shape != y.shape or not (a.dtype == bool or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(
            f"validation must be a boolean mask or an integer fold array of length {y.size}"
        )
    fold = np.where(a, 0, -1) if a.dtype == bool else a.astype(np.int64)
    if np.any(fold < -1):
        raise ValueError("validation folds must be ≥ 0, or -1 for pairs never held out")
    out = []
    for f in np.unique(fold[fold >= 0]):
        held = fold == f
        short = shortfall(y[~held & (w > 0)])
        if not short.ok:
            raise ValueError(f"the pairs outside validation fold {f} are too few: {short.message}")
        out.append((np.flatnonzero(~held), np.flatnonzero(held)))
    if not out:
        raise ValueError("validation holds out no pair")
    return out


def check_explore_params(model: Any) -> None:
    """EXPLORE's constructor parameters (checked at ``fit``, as scikit-learn does)."""
    cap = model.max_eigenvalue
    if not (cap is None or cap == "auto" or (isinstance(cap, (int, float)) and cap > 0)):
        raise ValueError(f"max_eigenvalue must be a positive number, 'auto' or None, got {cap!r}")
    if not (isinstance(model.tol, (int, float)) and model.tol > 0):
        raise ValueError(f"tol must be positive, got {model.tol!r}")
    if not (isinstance(model.max_iter, (int, np.integer)) and model.max_iter >= 1):
        raise ValueError(f"max_iter must be a positive integer, got {model.max_iter!r}")
    if model.precision not in ("mixed", "double"):
        raise ValueError(f"precision must be 'mixed' or 'double', got {model.precision!r}")
    if model.init not in ("identity", "random"):
        raise ValueError(f"init must be 'identity' or 'random', got {model.init!r}")
    a = model.alpha
    if not (a == "auto" or (isinstance(a, (int, float)) and not isinstance(a, bool) and a >= 0)):
        raise ValueError(f"alpha must be 'auto' or a number ≥ 0, got {a!r}")
    ps = model.prior_scale
    if not (ps == "auto" or (isinstance(ps, (int, float)) and ps > 0)):
        raise ValueError(f"prior_scale must be 'auto' or a positive number, got {ps!r}")


def stratified_folds(
    y: np.ndarray, kfold: bool, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Deterministic stratified validation folds: ``N_FOLDS`` folds when ``kfold``, else one
    ``VALIDATION_FRACTION`` split. Each training part keeps both labels when the data have them.
    """
    n = y.size
    rng = np.random.default_rng(seed)
    cls = np.where(y > 0.5, 1, np.where(y < 0.5, 0, 2))
    key = np.empty(n, dtype=np.int64)
    for c in (0, 1, 2):
        idx = np.flatnonzero(cls == c)
        key[idx[rng.permutation(idx.size)]] = np.arange(idx.size)
    if kfold:
        k = N_FOLDS
        fold = (key + cls) % k  # spread each class over the folds
        out = []
        for f in range(k):
            val = np.flatnonzero(fold == f)
            if val.size:
                out.append((np.flatnonzero(fold != f), val))
        return out
    period = int(round(1.0 / VALIDATION_FRACTION))
    val = np.flatnonzero(key % period == period - 1)
    return [(np.flatnonzero(key % period != period - 1), val)]
