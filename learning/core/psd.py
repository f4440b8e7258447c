"""Helpers for symmetric positive semi-definite (PSD) matrices.

All functions take and return float64 numpy arrays and never modify their input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Congruence",
    "canonical_signs",
    "is_psd",
    "project_psd",
    "projector",
    "sqrtm_psd",
    "symmetrize",
    "validate_sigma",
]


def symmetrize(a: ArrayLike) -> np.ndarray:
    """Return ``(A + Aᵀ) / 2`` for a square matrix ``A``."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {a.shape}")
    return (a + a.T) / 2.0


def _eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.linalg.eigh(symmetrize(a))


def project_psd(a: ArrayLike, max_eigenvalue: float | None = None) -> np.ndarray:
    """Frobenius-nearest symmetric matrix with spectrum in ``[0, max_eigenvalue]``.

    With ``A_sym = V diag(w) Vᵀ`` the projection is ``V diag(clip(w, 0, c)) Vᵀ`` (the set is
    orthogonally invariant, so the projection acts on the eigenvalues only).
    """
    if max_eigenvalue is not None and not max_eigenvalue > 0:
        raise ValueError(f"max_eigenvalue must be positive, got {max_eigenvalue!r}")
    w, v = _eigh(a)
    w = np.clip(w, 0.0, np.inf if max_eigenvalue is None else float(max_eigenvalue))
    return symmetrize((v * w) @ v.T)


def sqrtm_psd(a: ArrayLike) -> np.ndarray:
    """Symmetric square root ``S`` with ``S S = A`` of a PSD matrix (negative rounding clipped)."""
    w, v = _eigh(a)
    return symmetrize((v * np.sqrt(np.clip(w, 0.0, None))) @ v.T)


def is_psd(a: ArrayLike, rtol: float = 1e-8) -> bool:
    """True when ``A`` is symmetric and ``λ_min(A) ≥ -rtol · max(1, |λ|_max)``."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.all(np.isfinite(a)):
        return False
    scale = max(1.0, float(np.abs(a).max(initial=0.0)))
    if not np.allclose(a, a.T, rtol=0.0, atol=rtol * scale):
        return False
    w = np.linalg.eigvalsh(symmetrize(a))
    return bool(w.size == 0 or w[0] >= -rtol * max(1.0, float(np.abs(w).max())))


def validate_sigma(
    sigma: ArrayLike, dim: int | None = None, *, name: str = "sigma", rtol: float = 1e-8
) -> np.ndarray:
    """Check that ``sigma`` is a finite, symmetric PSD ``dim × dim`` matrix; return it symmetrised.

    Raises ``ValueError`` naming the first violated condition.
    """
    s = np.asarray(sigma, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {s.shape}")
    if dim is not None and s.shape[0] != dim:
        raise ValueError(f"{name} must be {dim}×{dim} to match the vectors, got {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{name} contains NaN or inf")
    scale = max(1.0, float(np.abs(s).max(initial=0.0)))
    if not np.allclose(s, s.T, rtol=0.0, atol=rtol * scale):
        raise ValueError(f"{name} is not symmetric")
    s = symmetrize(s)
    if s.size:
        w = np.linalg.eigvalsh(s)
        if w[0] < -rtol * max(1.0, float(np.abs(w).max())):
            raise ValueError(
                f"{name} is not positive semi-definite (smallest eigenvalue {w[0]:.3g})"
            )
    return s


def canonical_signs(vectors: np.ndarray) -> np.ndarray:
    """Flip each row so that its entry of largest absolute value is positive (deterministic signs).

    Ties are broken by the first such entry. Returns a new array.
    """
    v = np.array(vectors, dtype=np.float64, copy=True)
    if v.size == 0:
        return v
    pivot = np.argmax(np.abs(v), axis=1)
    signs = np.sign(v[np.arange(v.shape[0]), pivot])
    signs[signs == 0] = 1.0
    return v * signs[:, None]


def projector(directions: ArrayLike, dim: int | None = None, *, rtol: float = 1e-10) -> np.ndarray:
    """Orthogonal projector onto the row span of ``directions`` (k × d), ``P = Q Qᵀ``.

    Rows need not be orthonormal; numerically dependent rows are dropped (via the SVD).
    """
    a = np.atleast_2d(np.asarray(directions, dtype=np.float64))
    if a.ndim != 2:
        raise ValueError("directions must be a (k, d) array")
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"directions must have {dim} columns, got {a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise ValueError("directions contain NaN or inf")
    d = a.shape[1]
    if a.shape[0] == 0:
        return np.zeros((d, d))
    _, s, vt = np.linalg.svd(a, full_matrices=False)
    keep = s > rtol * max(float(s.max(initial=0.0)), np.finfo(float).tiny)
    q = vt[keep]
    return symmetrize(q.T @ q)


def eigh_descending(a: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and matching eigenvector columns of the symmetric part of ``A``."""
    w, v = _eigh(a)
    return w[::-1], v[:, ::-1]


def psd_factor(a: ArrayLike) -> np.ndarray:
    """``W`` with ``W Wᵀ = A`` for a PSD ``A`` (negative rounding clipped), so that
    ``zᵀ A z = ‖zᵀ W‖²``: one matrix product for any number of vectors."""
    w, v = _eigh(a)
    return v * np.sqrt(np.clip(w, 0.0, None))


@dataclass(frozen=True, eq=False)
class Congruence:
    """A derivation ``Σ ↦ K Σ Kᵀ`` (symmetrised) as data, so that it can be stored and applied
    again to other fits of the same recipe (e.g. a projection, ``K = I − P``)."""

    matrix: np.ndarray

    def __call__(self, sigma: ArrayLike) -> np.ndarray:
        k = np.asarray(self.matrix, dtype=np.float64)
        return symmetrize(k @ np.asarray(sigma, dtype=np.float64) @ k.T)
