"""A metric in the team's words, numpy only: each field's share of Σ's trace on the directions
records differ in, its weight beside Euclidean's, its share of the leading directions
(:func:`field_weights`), and each direction's load per field (:func:`field_loads`). A pair's own
split of d_Σ² among fields is :func:`learning.core.audit.field_shares`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..psd import eigh_descending, symmetrize

IGNORED_BELOW = 0.1  # a field ignored: each column weighs under a tenth of Euclidean's weight


@dataclass(frozen=True)
class FieldWeights:
    """Per field: ``trace`` = ``tr Σ'_ff / tr Σ'`` (adds up to 1), ``Σ' = PΣP`` with ``P`` the
    projection on the directions records differ in (a categorical field's levels less their
    mean: two records' one-hot difference never leaves it); ``relative`` = that share over the
    field's share of those directions (1: as Euclidean distance); ``leading`` = ``Σ_j λ_j
    ‖v_j,f‖² / Σ_j λ_j`` over Σ''s leading eigenvectors (carrying ``mass`` of the trace, at most
    ``most``), ``directions`` = ``‖v_j,f‖²`` (k, fields), ``carried`` = ``λ_j / tr Σ'``;
    ``ignored``: relative < IGNORED_BELOW."""

    trace: np.ndarray
    relative: np.ndarray
    leading: np.ndarray
    directions: np.ndarray
    carried: np.ndarray
    ignored: np.ndarray


def field_weights(sigma, starts, categorical=None, *, mass=0.9, most=5) -> FieldWeights:
    """Each field's weight in ``Σ`` (``categorical``: per field, one-hot levels); zero Σ: NaNs."""
    s, starts = symmetrize(np.asarray(sigma, dtype=np.float64)), np.asarray(starts, np.int64)
    d = s.shape[0]
    if starts.size == 0 or starts[0] != 0 or np.any(np.diff(starts) <= 0) or starts[-1] >= d:
        raise ValueError("starts must be ascending field starts beginning at 0, within Sigma")
    widths, p = np.diff(np.append(starts, d)), np.eye(d)
    levels = np.zeros(starts.size, bool) if categorical is None else categorical
    for at, w, cat in zip(starts, widths, levels, strict=True):
        p[at : at + w, at : at + w] -= np.full((w, w), 1.0 / w) if cat else 0.0
    s, free = p @ s @ p, np.add.reduceat(np.diag(p), starts)  # free: each field's directions
    diag = np.clip(np.diag(s), 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        trace = np.add.reduceat(diag, starts) / diag.sum()
        relative = np.where(free > 0.5, trace * free.sum() / free, 0.0)
    values, vectors = eigh_descending(s)
    values = np.clip(values, 0.0, None)
    carried = np.cumsum(values) / values.sum() if values.sum() > 0 else np.ones(d)
    k = int(min(most, d, np.searchsorted(carried, mass - 1e-12) + 1))
    loads = field_loads(vectors[:, :k], starts)  # (k, fields); rows sum to 1
    with np.errstate(invalid="ignore", divide="ignore"):
        leading = values[:k] @ loads / values[:k].sum()
    ignored = ~(relative >= IGNORED_BELOW)
    return FieldWeights(trace, relative, leading, loads, values[:k] / values.sum(), ignored)


def field_loads(vectors: ArrayLike, starts: ArrayLike) -> np.ndarray:
    """(k, fields): each unit column's squared length within each field (rows add up to 1)."""
    v = np.asarray(vectors, dtype=np.float64)
    return np.add.reduceat(v**2, np.asarray(starts, dtype=np.int64), axis=0).T
