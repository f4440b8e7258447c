"""What a Sigma ignores, in numbers: spectrum, sensitive subspace, drift between two Sigmas.

Plain numpy/scipy on arrays (the pages pass in Sigmas and the memory-mapped embedding matrix).

The *sensitive subspace* of a metric is spanned by Sigma's eigenvectors with small eigenvalues:
moving an item along them barely changes its fair distance, so the metric treats items that
differ only there as comparable. How many directions count as "small" is the numerical core's
rule (:func:`learning.core.drift.sensitive_subspace`, the same one the refits use for drift):
for FACE's projector I - QQᵀ the k eigenvalues below ½; otherwise the largest relative gap of
the ascending spectrum. Drift numbers come from :func:`learning.core.drift.drift`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learning.core.drift import drift as core_drift
from learning.core.drift import sensitive_subspace
from learning.core.psd import eigh_descending, symmetrize

MAX_SENSITIVE = 10  # directions listed on a page
ALIGNED_ROWS = 50_000  # rows of the embedding matrix searched (GloVe: the most frequent words)
ALIGNED_TOP = 10


@dataclass(frozen=True)
class Spectrum:
    values: np.ndarray  # eigenvalues, descending
    vectors: np.ndarray  # matching eigenvectors as columns
    sigma: np.ndarray  # the (symmetrised) matrix


def spectrum(sigma: np.ndarray) -> Spectrum:
    values, vectors = eigh_descending(sigma)
    return Spectrum(values=values, vectors=vectors, sigma=symmetrize(sigma))


def sensitive_basis(
    spec: Spectrum, *, limit: int | None = MAX_SENSITIVE
) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending, orthonormal columns) of the sensitive subspace.

    ``limit`` caps the number of directions (for display); ``None`` keeps the whole subspace
    (for comparing subspaces: with a tied eigenvalue, a cap would pick an arbitrary part).
    """
    ascending = spec.values[::-1]
    try:
        count = sensitive_subspace(spec.sigma).shape[1]
    except ValueError:  # not a valid Sigma (not symmetric PSD): nothing to show
        count = 0
    count = min(count, ascending.size if limit is None else limit)
    return ascending[:count], spec.vectors[:, ::-1][:, :count]


def aligned_rows(
    matrix: np.ndarray, basis: np.ndarray, *, rows: int = ALIGNED_ROWS, top: int = ALIGNED_TOP
) -> list[list[tuple[int, float]]]:
    """For each column of ``basis``: the ``top`` matrix rows with the largest |cos| to it.

    One matrix product over the first ``rows`` rows (a memory-mapped matrix reads only those).
    Returns, per direction, ``(row index, cosine)`` pairs, best first.
    """
    block = np.asarray(matrix[:rows], dtype=np.float64)
    if block.size == 0:
        return [[] for _ in range(basis.shape[1])]
    norms = np.linalg.norm(block, axis=1)
    norms[norms == 0] = 1.0
    cosines = (block @ basis) / norms[:, None]  # basis columns have unit norm
    k = min(top, block.shape[0])
    best = np.argpartition(-np.abs(cosines), k - 1, axis=0)[:k]  # (k, directions)
    result = []
    for j in range(basis.shape[1]):
        candidates = best[:, j]
        order = np.argsort(-np.abs(cosines[candidates, j]), kind="stable")
        result.append([(int(r), float(cosines[r, j])) for r in candidates[order]])
    return result


@dataclass(frozen=True)
class Drift:
    operator_norm: float  # ‖Σ₁ - Σ₀‖₂
    relative: float  # ‖Σ₁ - Σ₀‖₂ / ‖Σ₀‖₂
    frobenius: float
    max_angle_degrees: float  # largest principal angle between the sensitive subspaces
    angles_degrees: list[float]
    sensitive_dims: tuple[int, int] = (0, 0)  # the dimension compared, before and after
    dim_rules: tuple[str, str] = ("gap", "gap")  # how each was found (learning.core.drift)


def drift(before: np.ndarray, after: np.ndarray) -> Drift | None:
    """How far ``after`` moved from ``before``; None when their dimensions differ."""
    if before.shape != after.shape:
        return None
    try:
        found = core_drift(before, after)
    except ValueError:  # a stored matrix that is not a valid Sigma: no drift figure
        return None
    # Rounded: nested subspaces give angles of 1e-13 degrees, which are 0.
    angles = np.round(np.degrees(np.asarray(found.principal_angles)), 6)
    return Drift(
        operator_norm=found.operator_norm,
        relative=found.relative_operator_norm,
        frobenius=found.frobenius_norm,
        max_angle_degrees=float(angles.max()) if angles.size else 0.0,
        angles_degrees=[float(a) for a in np.sort(angles)],
        sensitive_dims=tuple(int(k) for k in found.sensitive_dims),
        dim_rules=tuple(found.dim_rules),
    )
