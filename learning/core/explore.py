"""EXPLORE: a Mahalanobis fair metric learned from pairs labelled comparable / incomparable.

Model (the seed paper's binary response model)::

    P(y = 1 | z) = 2σ(-d),    d = zᵀΣz,    z = φ(x₁) - φ(x₂),    Σ ≽ 0,

fitted by maximising the concave mean log-likelihood

    ℓ(Σ) = (1/n) Σ_i [ y_i log(2σ(-d_i)) + (1 - y_i) log(1 - 2σ(-d_i)) ]
         = (1/n) Σ_i [ y_i (log 2 - softplus(d_i)) + (1 - y_i) log tanh(d_i / 2) ]

over ``{Σ : 0 ≼ Σ ≼ c·I}``. Labels may be soft (``y ∈ [0, 1]``, e.g. 0.5 for "unsure"): the
objective is then the expected log-likelihood, still concave.

Why a cap ``c``: when some direction separates comparable from incomparable pairs the
likelihood keeps increasing as Σ grows along it, and the maximiser is at infinity (the paper's
theory assumes ``λ_max(Σ) ≤ C``). ``max_eigenvalue="auto"`` (the default) sets
``c = 100 · d / mean_i ‖z_i‖²``: 100 times the inverse of the mean squared coordinate of the
differences. A well-specified Σ has ``d_i = O(1)`` for typical pairs, i.e. eigenvalues of order
``1 / mean ‖z‖²``, far below this cap, which therefore only binds on (nearly) separable data,
where it makes the optimum finite and the solver converge. ``None`` removes the cap (only
sensible when the data do not separate); a float sets it explicitly.

Solver: preconditioned FISTA on the full batch (see ``_explore_solver``), started from the best
of ``c·I`` and ``c·C⁻¹`` (C the second moment of the differences). It stops when two
consecutive steps each gain at most ``tol`` (default 1e-5) of mean log-likelihood and a further
projected-gradient step could promise no more than ``tol``; on the benchmark data this leaves
``loglik_`` within ~1e-6 of the optimum (target: 1e-4). ``precision="mixed"`` (default) runs the
n×d products in float32 and reports ``loglik_`` recomputed in float64; ``"double"`` runs in
float64 (use it with a very small ``tol``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from . import _explore_solver
from ._pairloss import PairBlocks, pair_loglik, quad_forms
from .psd import projector, symmetrize

__all__ = ["EXPLORE", "pair_loglik"]

AUTO_CAP_FACTOR = 100.0


def _check_matrix(x: ArrayLike, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, d), got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise ValueError(f"{name} must be real-valued")
    a = a.astype(np.float64, copy=False)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def _check_labels(y: ArrayLike, n: int) -> np.ndarray:
    lab = np.asarray(y)
    if lab.ndim != 1 or lab.shape[0] != n:
        raise ValueError(f"y must be a 1-D array of length {n}, got shape {lab.shape}")
    if not (np.issubdtype(lab.dtype, np.number) or lab.dtype == bool):
        raise ValueError("y must be numeric (1 comparable, 0 incomparable)")
    lab = lab.astype(np.float64)
    if not np.all(np.isfinite(lab)) or np.any((lab < 0) | (lab > 1)):
        raise ValueError("y must lie in [0, 1] (1 comparable, 0 incomparable, soft labels between)")
    if not (np.any(lab > 0) and np.any(lab < 1)):
        which = "comparable (y=1)" if np.all(lab == 1) else "incomparable (y=0)"
        raise ValueError(f"y has one class only (all pairs {which}); EXPLORE needs both")
    return lab


def _best_scale(q: np.ndarray, y: np.ndarray, hi: float) -> tuple[float, float]:
    """``argmax_{0 < c ≤ hi} mean ℓ(c·q, y)`` (concave in c): log grid, then golden section."""

    def loglik(c: float) -> float:
        return float(np.mean(pair_loglik(c * q, y)))

    grid = hi * np.logspace(-8, 0, 13)
    vals = [loglik(c) for c in grid]
    k = int(np.argmax(vals))
    lo_c, hi_c = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    inv_phi = (np.sqrt(5.0) - 1.0) / 2.0
    a = lo_c * (hi_c / lo_c) ** (1.0 - inv_phi)
    b = lo_c * (hi_c / lo_c) ** inv_phi
    fa, fb = loglik(a), loglik(b)
    for _ in range(12):  # golden section in log c, one new evaluation per step
        if fa >= fb:
            hi_c, b, fb = b, a, fa
            a = lo_c * (hi_c / lo_c) ** (1.0 - inv_phi)
            fa = loglik(a)
        else:
            lo_c, a, fa = a, b, fb
            b = lo_c * (hi_c / lo_c) ** inv_phi
            fb = loglik(b)
    cands = [(vals[k], grid[k]), (fa, a), (fb, b)]
    ll, c = max(cands)
    return float(c), float(ll)


def p_comparable(d: ArrayLike) -> np.ndarray:
    """The response model: ``P(comparable) = 2σ(-d)`` for squared metric distances ``d ≥ 0``."""
    return 2.0 * expit(-np.asarray(d, dtype=np.float64))


def _differences(x1: ArrayLike, x2: ArrayLike) -> np.ndarray:
    a, b = _check_matrix(x1, "X1"), _check_matrix(x2, "X2")
    if a.shape != b.shape:
        raise ValueError(f"X1 and X2 must have the same shape, got {a.shape} and {b.shape}")
    return a - b


class EXPLORE:
    """Fair metric from labelled pairs by maximum likelihood (the paper's EXPLORE).

    Parameters
    ----------
    max_eigenvalue : float, "auto" or None
        Bound ``c`` on the spectrum of Σ (see the module docstring for the "auto" rule).
    sensitive_directions : array (k, d), optional
        After fitting, ``Σ ← (I - P) Σ (I - P)`` with ``P`` the projector onto their row span.
    tol : float
        Stopping tolerance on the mean log-likelihood (see the module docstring).
    max_iter : int
        Maximum number of solver iterations.
    precision : {"mixed", "double"}
        Floating point type of the n×d products during iterations.
    init : {"identity", "random"}
        Start from the best scaled identity, or from a random PSD matrix drawn with
        ``random_state`` (the optimum does not depend on it: the problem is concave).
    random_state : int, numpy Generator or None

    Attributes
    ----------
    sigma_ : (d, d) PSD matrix.  loglik_ : mean log-likelihood of ``sigma_`` on the fitting data.
    n_iter_, converged_, projected_gradient_norm_ (norm of the last gradient-mapping step in the
    preconditioned metric), max_eigenvalue_ (the resolved cap, inf if none), n_features_in_.
    """

    def __init__(
        self,
        max_eigenvalue: float | Literal["auto"] | None = "auto",
        *,
        sensitive_directions: ArrayLike | None = None,
        tol: float = 1e-5,
        max_iter: int = 500,
        precision: Literal["mixed", "double"] = "mixed",
        init: Literal["identity", "random"] = "identity",
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.max_eigenvalue = max_eigenvalue
        self.sensitive_directions = sensitive_directions
        self.tol = tol
        self.max_iter = max_iter
        self.precision = precision
        self.init = init
        self.random_state = random_state

    # -- fitting -------------------------------------------------------------------------------
    def fit(self, X1: ArrayLike, X2: ArrayLike, y: ArrayLike) -> EXPLORE:
        """Fit on pairs ``(X1[i], X2[i])`` with labels ``y[i]`` (1 comparable, 0 incomparable)."""
        return self.fit_differences(_differences(X1, X2), y)

    def fit_differences(self, Z: ArrayLike, y: ArrayLike) -> EXPLORE:
        """Fit on difference vectors ``Z[i] = φ(x_i1) - φ(x_i2)``."""
        z = _check_matrix(Z, "Z")
        lab = _check_labels(y, z.shape[0])
        self._check_params()
        n, d = z.shape
        sq = np.einsum("ij,ij->i", z, z)
        if not np.any(sq > 0):
            raise ValueError("all difference vectors are zero; Sigma is not identifiable")
        cap = self._resolve_cap(sq, d)
        order = PairBlocks.order(lab)
        blocks = PairBlocks.from_sorted(lab[order])
        work = np.float32 if self.precision == "mixed" else np.float64
        zw = np.ascontiguousarray(z[order], dtype=work)
        sigma0 = self._initial_sigma(zw, blocks, d, cap)
        res = _explore_solver.solve(
            zw, blocks, sigma0, cap=cap, tol=float(self.tol), max_iter=int(self.max_iter)
        )
        sigma = symmetrize(res.sigma)
        w, v = np.linalg.eigh(sigma)
        sigma = symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)
        if self.sensitive_directions is not None:
            keep = np.eye(d) - projector(self.sensitive_directions, d)
            sigma = symmetrize(keep @ sigma @ keep)
        self.sigma_ = sigma
        self.loglik_ = float(np.mean(pair_loglik(quad_forms(z, sigma), lab)))
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.projected_gradient_norm_ = res.projected_gradient_norm
        self.max_eigenvalue_ = cap
        self.n_features_in_ = d
        return self

    def _check_params(self) -> None:
        cap = self.max_eigenvalue
        if not (cap is None or cap == "auto" or (isinstance(cap, (int, float)) and cap > 0)):
            raise ValueError(
                f"max_eigenvalue must be a positive number, 'auto' or None, got {cap!r}"
            )
        if not (isinstance(self.tol, (int, float)) and self.tol > 0):
            raise ValueError(f"tol must be positive, got {self.tol!r}")
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if self.precision not in ("mixed", "double"):
            raise ValueError(f"precision must be 'mixed' or 'double', got {self.precision!r}")
        if self.init not in ("identity", "random"):
            raise ValueError(f"init must be 'identity' or 'random', got {self.init!r}")

    def _resolve_cap(self, sq: np.ndarray, d: int) -> float:
        if self.max_eigenvalue is None:
            return np.inf
        if self.max_eigenvalue == "auto":
            return float(AUTO_CAP_FACTOR * d / np.mean(sq))
        return float(self.max_eigenvalue)

    def _initial_sigma(self, z: np.ndarray, blocks: PairBlocks, d: int, cap: float) -> np.ndarray:
        """Best of ``c·I`` and ``c·C⁻¹`` (``C`` the second moment of the differences), with
        ``c`` maximising the likelihood (1-D concave search on a deterministic pair subsample).
        """
        stride = max(1, blocks.n // 10000)
        sub_z, sub_y = z[::stride].astype(np.float64), blocks.y[::stride]
        if not (np.any(sub_y > 0) and np.any(sub_y < 1)):
            sub_z, sub_y = z.astype(np.float64), blocks.y
        second = sub_z.T @ sub_z / sub_z.shape[0]
        w, v = np.linalg.eigh(second)
        floor = 1e-6 * max(float(w[-1]), np.finfo(float).tiny)
        inv = (v / np.maximum(w, floor)) @ v.T
        best_ll, best = -np.inf, np.eye(d)
        for shape in (np.eye(d), (inv + inv.T) / 2.0):
            q = quad_forms(sub_z, shape)
            top = float(np.linalg.eigvalsh(shape)[-1])
            hi = min(cap / top, 1e6 / max(float(np.mean(q)), np.finfo(float).tiny))
            c, ll = _best_scale(q, sub_y, hi)
            if ll > best_ll:
                best_ll, best = ll, c * shape
        if self.init == "identity":
            return best
        rng = np.random.default_rng(self.random_state)
        g = rng.standard_normal((d, d))
        s = float(np.trace(best)) / d * (0.5 * np.eye(d) + g @ g.T / d)
        w, v = np.linalg.eigh(s)
        return symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)

    # -- using the fitted metric ---------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "sigma_"):
            raise ValueError("this EXPLORE instance is not fitted yet; call fit first")

    def distance(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        """Squared metric distances ``d_i = (x1_i - x2_i)ᵀ Σ (x1_i - x2_i)``."""
        self._check_fitted()
        z = _differences(X1, X2)
        if z.shape[1] != self.n_features_in_:
            raise ValueError(f"expected {self.n_features_in_} features, got {z.shape[1]}")
        return np.maximum(quad_forms(z, self.sigma_), 0.0)

    def predict_proba(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        """``P(comparable) = 2σ(-d)`` per pair."""
        return p_comparable(self.distance(X1, X2))

    def score(self, X1: ArrayLike, X2: ArrayLike, y: ArrayLike) -> float:
        """Mean log-likelihood of labelled pairs under the fitted Σ."""
        d = self.distance(X1, X2)
        lab = np.asarray(y, dtype=np.float64)
        if lab.shape != d.shape or np.any((lab < 0) | (lab > 1)) or not np.all(np.isfinite(lab)):
            raise ValueError(f"y must be a 1-D array of {d.size} labels in [0, 1]")
        return float(np.mean(pair_loglik(d, lab)))
