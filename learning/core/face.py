"""FACE: Factor Analysis of Comparable Embeddings (the seed paper's Algorithm 1).

Given embeddings ``X`` (n × d) and groups ``I_1..I_G`` of comparable items, centre each group
(``H_g Φ_g``), stack the centred groups and take the top-k right singular vectors ``Q`` (k × d)
of the stack; the fair metric is ``Σ = I - QᵀQ`` (the projector onto the complement of the
estimated sensitive subspace ``ran(A*)``).

The stack is never materialised: its right singular vectors are the eigenvectors of the
within-group scatter ``S = Σ_g Φ_gᵀ H_g Φ_g = Σ_g Σ_{i∈g} (φ_i - φ̄_g)(φ_i - φ̄_g)ᵀ``, which is
accumulated in O(n d²) in one chunked, vectorised pass (``S = Σ yyᵀ - Σ_g s_g s_gᵀ / n_g`` with
``y = x - μ`` for a global shift μ and group sums ``s_g`` as sparse 0/1 products; an exactly
centred second pass when cancellation would be large), and the singular values are the square
roots of its eigenvalues. For pairs (groups of two) the centred rows are
``±(φ₁ - φ₂)/2``, so FACE on pairs is the SVD of the pairwise differences (paper, appendix).

``n_components="auto"``: with the scatter's eigenvalues ``λ_1 ≥ … ≥ λ_d`` and ``r`` the number
of them above ``1e-10·λ_1``, ``k = argmax_{1 ≤ i < r} λ_i / λ_{i+1}`` (the largest relative gap
of the spectrum; ``k = 1`` when ``r ≤ 1``). Gaps into the numerically-zero tail are ignored, so
a rank-deficient scatter (fewer centred rows than dimensions) does not select its rank.

``heterogeneity_ = Σ_{i>k} λ_i / Σ_i λ_i``: the share of within-group variance outside the top-k
factors. Groups that are homogeneous in the relevant attributes leave only noise there; the
bias term of the paper's Theorems 1-2 grows with it.

Precision (``precision="auto"``, the default: "mixed" for float32 rows, else "double"). "double"
accumulates the scatter in float64 as above. "mixed" (``_scatter_mixed``) centres the rows on
their group means first and forms the Gram in float32 (one SYRK per 16,384 rows, the chunks
summed in float64), with the residual group sums correcting for the rounding of the means:
each centred entry is accurate to float32 rounding *of itself*, so nothing cancels. Measured
against float64 (``benchmarks/core.py``; a test at 1e-6 on rows offset 100 from the origin): the
scatter within ~1e-7 relative (Frobenius), ``Σ`` within ~1e-8 in operator norm — far below the
sampling error of any scatter — at about half the arithmetic of the float64 pass.

Signs are deterministic: each component's entry of largest absolute value is positive.

Refusals and warnings: ``n_components = d`` is refused (``Σ = 0``: what remains is rounding
noise, which WEAT would read as a metric); ``X`` must be finite in every row, grouped or not;
when ``k`` exceeds the rank ``r`` of the within-group scatter (eigenvalues above
``1e-10·λ₁``) the last ``k - r`` components are arbitrary: a ``UserWarning`` is raised and the
message is kept in ``warnings_`` (``scatter_rank_ = r``).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.sparse import csr_matrix

from ._validation import as_groups, check_finite, check_groups, check_matrix
from .psd import canonical_signs, symmetrize

__all__ = ["FACE", "auto_n_components"]

_CHUNK_ROWS = 65536
_MIXED_CHUNK_ROWS = 16384  # rows per float32 Gram (its sums run in float32 inside a chunk)
RANK_RTOL = 1e-10  # scatter eigenvalues ≤ RANK_RTOL · λ₁ count as zero


def auto_n_components(eigenvalues: ArrayLike, rtol: float = 1e-10) -> int:
    """The documented ``n_components="auto"`` rule on a spectrum (any order)."""
    lam = np.sort(np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None))[::-1]
    if lam.size == 0 or lam[0] <= 0:
        return 1
    r = int(np.sum(lam > rtol * lam[0]))  # rtol defaults to RANK_RTOL
    if r <= 1:
        return 1
    ratios = lam[: r - 1] / lam[1:r]
    return int(np.argmax(ratios)) + 1


def _chunks(rows: np.ndarray, size: int | None = None):
    """Yield (start, stop, X-row selector) per chunk; a slice when the rows are contiguous."""
    size = size or _CHUNK_ROWS
    for start in range(0, rows.size, size):
        r = rows[start : start + size]
        if r[-1] - r[0] == r.size - 1 and np.all(np.diff(r) == 1):
            yield start, start + r.size, slice(int(r[0]), int(r[-1]) + 1)
        else:
            yield start, start + r.size, r


def _indicator(g: np.ndarray, dtype=np.float64) -> csr_matrix:
    """Sparse 0/1 (groups × rows) matrix of group ids ``g`` (contiguous, ascending)."""
    counts = np.bincount(g - g[0])
    return csr_matrix(
        (np.ones(g.size, dtype=dtype), np.arange(g.size), np.r_[0, np.cumsum(counts)]),
        shape=(counts.size, g.size),
    )


def _scatter_mixed(X: np.ndarray, rows: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The within-group scatter with a float32 Gram (module docstring, "precision").

    Pass 1: approximate group means ``m̃_g`` (float32 sums for float32 ``X``, else float64).
    Pass 2: centred rows ``c_i = x_i - m̃_g`` in float32 — each entry accurate to an ulp of
    itself, so nothing cancels against a raw second moment — their float32 Gram per chunk of
    ``_MIXED_CHUNK_ROWS`` rows, the chunks summed in float64, and the residual group sums
    ``r_g = Σ_{i∈g} c_i``; then ``S = Σ c_i c_iᵀ - Σ_g r_g r_gᵀ / n_g`` exactly (the identity
    holds for any centre), so the rounding of ``m̃`` costs nothing.
    """
    d = X.shape[1]
    gid = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    work = np.float32 if X.dtype == np.float32 else np.float64
    sums = np.zeros((sizes.size, d), dtype=work)
    for a, b, sel in _chunks(rows):
        g = gid[a:b]
        sums[g[0] : g[-1] + 1] += _indicator(g, work) @ X[sel]
    if not np.all(np.isfinite(sums)):
        raise ValueError(
            "X contains NaN or inf (or values so large that they overflow) "
            "in rows that belong to a group"
        )
    means = sums / sizes[:, None].astype(work)
    del sums
    resid = np.zeros((sizes.size, d))
    scatter = np.zeros((d, d))
    for a, b, sel in _chunks(rows):
        g = gid[a:b]
        c = np.subtract(X[sel], means[g], dtype=np.float32)
        for start in range(0, c.shape[0], _MIXED_CHUNK_ROWS):
            part = c[start : start + _MIXED_CHUNK_ROWS]
            scatter += part.T @ part  # float32 SYRK, added in float64
        resid[g[0] : g[-1] + 1] += _indicator(g, np.float32) @ c
    root = (resid / np.sqrt(sizes)[:, None]).astype(np.float32)
    scatter -= root.T @ root
    if not np.all(np.isfinite(scatter)):
        raise ValueError("X has values so large that the within-group scatter overflows")
    return symmetrize(scatter)


def within_group_scatter(
    X: np.ndarray, rows: np.ndarray, sizes: np.ndarray, precision: str = "double"
) -> np.ndarray:
    """``Σ_g Σ_{i∈g} (x_i - x̄_g)(x_i - x̄_g)ᵀ`` in float64, in one chunked vectorised pass
    (``precision="mixed"``: two passes with a float32 Gram, ``_scatter_mixed``).

    With a global shift ``μ`` (the mean of the first chunk) and ``y = x - μ``:
    ``S = Σ_i y_i y_iᵀ - Σ_g s_g s_gᵀ / n_g`` with group sums ``s_g = Σ_{i∈g} y_i``
    (a sparse 0/1 indicator product per chunk). The shift keeps the cancellation small; if it is still large
    (``tr S < 1e-8 · Σ‖y_i‖²``) a second, exactly centred pass is made instead.
    """
    if precision == "mixed":
        return _scatter_mixed(X, rows, sizes)
    d = X.shape[1]
    gid = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    sums = np.zeros((sizes.size, d))
    raw = np.zeros((d, d))
    shift = None
    for a, b, sel in _chunks(rows):
        if shift is None:
            shift = np.asarray(X[sel], dtype=np.float64).mean(axis=0)
        block = np.subtract(X[sel], shift, dtype=np.float64)
        g = gid[a:b]
        sums[g[0] : g[-1] + 1] += _indicator(g) @ block  # exact and fast
        raw += block.T @ block
    if not (np.all(np.isfinite(sums)) and np.all(np.isfinite(raw))):
        raise ValueError(
            "X contains NaN or inf (or values so large that they overflow) "
            "in rows that belong to a group"
        )
    weighted = sums / np.sqrt(sizes)[:, None]
    scatter = raw - weighted.T @ weighted
    if np.trace(scatter) >= 1e-8 * np.trace(raw):
        return symmetrize(scatter)
    means = sums / sizes[:, None] + shift
    scatter = np.zeros((d, d))
    for a, b, sel in _chunks(rows):
        block = np.asarray(X[sel], dtype=np.float64) - means[gid[a:b]]
        scatter += block.T @ block
    return symmetrize(scatter)


class FACE:
    """Fair metric from groups of comparable items: ``Σ = I - QᵀQ`` (see the module docstring).

    Parameters
    ----------
    n_components : int or "auto"
        Number k of sensitive factors, ``1 ≤ k ≤ d``; "auto" applies the largest-gap rule.
    precision : {"auto", "mixed", "double"}
        Gram of the centred rows in float32 ("mixed") or float64; "auto": "mixed" for float32
        ``X`` (module docstring, "precision"); ``precision_`` says which ran.

    ``fit(X, groups)``: ``groups`` is a list of integer index arrays into ``X`` (each of size
    ≥ 2; a pair is a group of two; a row may belong to several groups). Conveniences: a (G, s)
    integer array (one group per row, e.g. pairs as (G, 2)), or a 1-D integer array of length n
    giving each row's group label, -1 for rows in no group.

    Attributes
    ----------
    sigma_ (d, d), components_ (k, d) orthonormal rows, singular_values_ (k,),
    explained_variance_ratio_ (k,) (share of the within-group scatter per component),
    spectrum_ (d,) all eigenvalues of the scatter (descending), heterogeneity_,
    n_components_ (resolved k), n_features_in_, n_groups_, n_rows_ (rows in groups, with
    repetition), scatter_rank_ (rank of the within-group scatter), warnings_ (readable strings).
    """

    def __init__(
        self,
        n_components: int | Literal["auto"] = 1,
        *,
        precision: Literal["auto", "mixed", "double"] = "auto",
    ) -> None:
        self.n_components = n_components
        self.precision = precision

    def fit(self, X: ArrayLike, groups: object) -> FACE:
        x = check_matrix(X, "X")  # in its own dtype: float32 rows select "mixed"
        n, d = x.shape
        self._check_k(d)
        check_finite(x, "X", "every row is checked, grouped or not")
        if self.precision not in ("auto", "mixed", "double"):
            raise ValueError(
                f"precision must be 'auto', 'mixed' or 'double', got {self.precision!r}"
            )
        mixed = self.precision == "mixed" or (self.precision == "auto" and x.dtype == np.float32)
        rows, sizes = as_groups(groups, n)
        check_groups(rows, sizes, n)
        scatter = within_group_scatter(x, rows, sizes, "mixed" if mixed else "double")
        self.precision_ = "mixed" if mixed else "double"
        return self._fit_scatter(scatter, n_groups=int(sizes.size), n_rows=int(rows.size))

    def fit_scatter(self, scatter: ArrayLike, *, n_groups: int, n_rows: int) -> FACE:
        """FACE from a within-group scatter already summed (``within_group_scatter`` of the
        groups, added up over parts of them: the scatter of a union of groups is the sum of
        theirs; a pair's is ``zzᵀ/2`` with ``z`` its difference). ``n_groups``, ``n_rows``:
        the groups and grouped rows it sums (``n_groups_``, ``n_rows_``)."""
        scatter = np.asarray(scatter, dtype=np.float64)
        if scatter.ndim != 2 or scatter.shape[0] != scatter.shape[1]:
            raise ValueError(f"scatter must be a square matrix, got shape {scatter.shape}")
        if not np.all(np.isfinite(scatter)):
            raise ValueError("the within-group scatter has NaN or inf entries")
        self._check_k(scatter.shape[0])
        self.precision_ = "double"
        return self._fit_scatter(symmetrize(scatter), n_groups=n_groups, n_rows=n_rows)

    def _check_k(self, d: int) -> None:
        k = self.n_components
        if not (k == "auto" or (isinstance(k, (int, np.integer)) and not isinstance(k, bool))):
            raise ValueError(f"n_components must be an integer or 'auto', got {k!r}")
        if k != "auto" and not 1 <= int(k) <= d:
            raise ValueError(f"n_components must satisfy 1 ≤ k ≤ d = {d}, got {k}")
        if k != "auto" and int(k) == d:
            raise ValueError(
                f"n_components = d = {d} removes every direction (Sigma = 0, its entries are "
                "rounding noise); choose k < d"
            )

    def _fit_scatter(self, scatter: np.ndarray, *, n_groups: int, n_rows: int) -> FACE:
        d, k = scatter.shape[0], self.n_components
        lam, vec = np.linalg.eigh(scatter)
        lam, vec = np.clip(lam[::-1], 0.0, None), vec[:, ::-1]
        total = float(lam.sum())
        if total <= 0.0:
            raise ValueError(
                "every group is constant (no within-group variation): "
                "the sensitive subspace is not identifiable"
            )
        k_ = auto_n_components(lam) if k == "auto" else int(k)
        rank = int(np.sum(lam > RANK_RTOL * lam[0]))
        self.warnings_: list[str] = []
        if k_ > rank:
            msg = (
                f"n_components = {k_} exceeds the rank {rank} of the within-group scatter: "
                f"{k_ - rank} component(s) are arbitrary directions the groups do not vary in"
            )
            self.warnings_.append(msg)
            warnings.warn(msg, UserWarning, stacklevel=3)
        self.scatter_rank_ = rank
        comps = canonical_signs(vec[:, :k_].T)
        self.components_ = comps
        self.sigma_ = symmetrize(np.eye(d) - comps.T @ comps)
        self.singular_values_ = np.sqrt(lam[:k_])
        self.explained_variance_ratio_ = lam[:k_] / total
        self.spectrum_ = lam
        self.heterogeneity_ = float(max(0.0, 1.0 - lam[:k_].sum() / total))
        self.n_components_ = k_
        self.n_features_in_ = d
        self.n_groups_ = n_groups
        self.n_rows_ = n_rows
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project rows onto the fair subspace: ``X (I - QᵀQ)``."""
        if not hasattr(self, "sigma_"):
            raise ValueError("this FACE instance is not fitted yet; call fit first")
        return np.asarray(X, dtype=np.float64) @ self.sigma_
