"""What a Sigma ignores, in numbers: spectrum, sensitive subspace, drift between two Sigmas.

Plain numpy/scipy on arrays (the pages pass in Sigmas and the memory-mapped embedding matrix).

The *sensitive subspace* of a metric is spanned by Sigma's eigenvectors with small eigenvalues:
moving an item along them barely changes its fair distance, so the metric treats items that
differ only there as comparable. Here "small" means ``λ ≤ SENSITIVE_RATIO · λ_max`` (at most
``MAX_SENSITIVE`` directions, at least one). For FACE, Sigma = I - QQᵀ has eigenvalues 0 and 1,
so this is exactly the span of Q (k directions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import subspace_angles

SENSITIVE_RATIO = 0.1
MAX_SENSITIVE = 10
ALIGNED_ROWS = 50_000  # rows of the embedding matrix searched (GloVe: the most frequent words)
ALIGNED_TOP = 10


@dataclass(frozen=True)
class Spectrum:
    values: np.ndarray  # eigenvalues, descending
    vectors: np.ndarray  # matching eigenvectors as columns


def spectrum(sigma: np.ndarray) -> Spectrum:
    sym = (np.asarray(sigma, dtype=np.float64) + np.asarray(sigma, dtype=np.float64).T) / 2
    values, vectors = np.linalg.eigh(sym)
    return Spectrum(values=values[::-1], vectors=vectors[:, ::-1])


def sensitive_basis(
    spec: Spectrum, *, limit: int | None = MAX_SENSITIVE
) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending, orthonormal columns) of the sensitive subspace.

    ``limit`` caps the number of directions (for display); ``None`` keeps the whole subspace
    (for comparing subspaces: with a tied eigenvalue, a cap would pick an arbitrary part).
    """
    ascending = spec.values[::-1]
    top = max(float(spec.values[0]), 0.0)
    count = int(np.sum(ascending <= SENSITIVE_RATIO * top)) if top > 0 else ascending.size
    count = min(max(count, 1), ascending.size if limit is None else limit, ascending.size)
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


def drift(before: np.ndarray, after: np.ndarray) -> Drift | None:
    """How far ``after`` moved from ``before``; None when their dimensions differ."""
    if before.shape != after.shape:
        return None
    delta = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    op = float(np.linalg.norm(delta, 2))
    base = float(np.linalg.norm(before, 2))
    _, basis_before = sensitive_basis(spectrum(before), limit=None)
    _, basis_after = sensitive_basis(spectrum(after), limit=None)
    # Rounded: nested subspaces give angles of 1e-13 degrees, which are 0.
    angles = np.round(np.degrees(subspace_angles(basis_before, basis_after)), 6)
    return Drift(
        operator_norm=op,
        relative=op / base if base > 0 else float("inf"),
        frobenius=float(np.linalg.norm(delta)),
        max_angle_degrees=float(angles.max()) if angles.size else 0.0,
        angles_degrees=[float(a) for a in np.sort(angles)],
    )
