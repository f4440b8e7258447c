"""One EXPLORE fitting problem in the span of its pair differences (``Problem``), and the
small matrix helpers the fits share.

``Problem`` holds the pairs of a fit (all pairs, or the training part of a validation fold) in
span coordinates: the differences projected on the span, cast to the work precision and sorted
into label blocks; the prior there and its distances; the penalty metric ``W``; and the solver
call; ``fit_warnings`` reads a fit on it (``bound_active_`` and the readable warnings). The
module docstring of ``explore.py`` ("null space", "regularisation", "safeguards") gives the rules.
"""

from __future__ import annotations

import numpy as np

from . import _explore_solver
from ._pairloss import (
    PairBlocks,
    PairDifferences,
    curvature,
    quad_forms,
    take_rows,
    weighted_gram,
)
from .explore_data.differences import Differences as Differences
from .explore_data.differences import FitLoglik as FitLoglik
from .explore_data.differences import second_moment as second_moment
from .psd import sqrtm_psd, symmetrize

SPAN_RTOL = 1e-10  # second-moment eigenvalues ≤ SPAN_RTOL·max are directions the data miss
SEPARATION_LEVEL = 10.0  # whitened eigenvalue read as "data separate" for a fixed alpha


def clip_spectrum(s: np.ndarray, cap: float) -> np.ndarray:
    """``S`` with its eigenvalues clipped to ``[0, cap]`` (``cap`` may be inf)."""
    w, v = np.linalg.eigh(symmetrize(s))
    return symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)


def _weighted_quantile(values: np.ndarray, w: np.ndarray, q: float) -> float:
    """The q-quantile of ``values`` counting each with weight ``w`` (equal weights: the lower
    of numpy's two nearest order statistics, close to ``np.quantile``; unit weights: the same
    order statistic by a partition, O(n) instead of a sort)."""
    if np.all(w == 1.0):
        k = min(
            int(np.searchsorted(np.arange(1.0, values.size + 1), q * values.size)), values.size - 1
        )
        return float(np.partition(values, k)[k])
    order = np.argsort(values)
    cum = np.cumsum(w[order])
    k = int(np.searchsorted(cum, q * cum[-1]))
    return float(values[order[min(k, values.size - 1)]])


class Problem:
    """One fitting problem in span coordinates (``explore.py``'s module docstring, "null space")."""

    def __init__(
        self,
        z: np.ndarray,
        y: np.ndarray,
        prior: np.ndarray,
        second: np.ndarray,
        precision: str,
        rows: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        parent: Problem | None = None,
        sq: np.ndarray | None = None,
    ) -> None:
        """``rows``: the pairs of ``z`` (``y``, ``weights``) this problem uses (default: all).

        ``parent``: the problem on all pairs, when this one is a subset of it (a training part):
        when both live on all ``d`` coordinates, the rows, the prior's distances and the penalty
        metric are taken from it (exactly the same numbers, no n×d² product and no gather from
        the float64 differences). ``sq``: the squared norms ``‖z_i‖²`` (optional; else the
        parent's): with a scaled identity prior they are its distances (no n×d² product; a
        training part's prior has its own scale, ``_explore_start.fold_priors``).
        """
        self._args = (z, y, prior, second, precision, rows, weights, parent, sq)  # ``restore``
        data = z if isinstance(z, Differences) else None
        z = z.z if data is not None else z
        self.sq = sq = parent.sq if sq is None and parent is not None else sq
        d = z.shape[1]
        w, v = np.linalg.eigh(second)
        top = max(float(w[-1]), np.finfo(float).tiny)
        r = int(np.sum(w > SPAN_RTOL * top))
        self.d, self.r = d, r
        if r == d:
            self.u = None
            self.second = second
        else:
            self.u = v[:, d - r :]
            self.second = np.diag(w[d - r :])
        self.prior = prior
        self.target = prior if self.u is None else self.u.T @ prior @ self.u
        y = y if rows is None else y[rows]
        w = np.ones(y.size) if weights is None else (weights if rows is None else weights[rows])
        w = w * (y.size / float(np.sum(w)))  # mean 1 on this problem's pairs
        order = PairBlocks.order(y)
        self.w = w[order]
        self.blocks = PairBlocks.from_sorted(y[order], None if weights is None else self.w)
        work = np.float32 if precision == "mixed" else np.float64
        idx = order if rows is None else rows[order]
        idx = idx.astype(np.int32) if idx.size < 2**31 else idx  # 4 bytes a pair, not 8
        self.rows = idx  # the pair (row of ``z``) behind each row of ``zw``
        self.data = data if self.u is None else None  # its distances serve this problem
        self.work = work
        self._pending = (z, y if rows is None else None, rows, parent, idx, sq, d)

    LAZY = frozenset({"zw", "d_prior", "h", "h_cap", "_gram_h", "weight"})

    def __getattr__(self, name: str):
        """The per-pair arrays (``LAZY``) are built on first use: a problem read only for its
        span (the problem on all pairs when a refit's plain fit keeps its validation fit and
        the folds have their own priors) costs no n-sized pass."""
        pending = self.__dict__.get("_pending")
        if name not in Problem.LAZY or pending is None:
            raise AttributeError(name)
        self._pending = None
        self._per_pair(*pending)
        return self.__dict__[name]

    def _per_pair(self, z, y, rows, parent, idx, sq, d) -> None:
        """The rows in the work precision (``zw``), the prior's distances, the curvature and
        the penalty metric (``__init__``'s docstring; ``y``: all labels, None with ``rows``)."""
        work, r = self.work, self.r
        if (
            parent is not None
            and rows is not None
            and self.u is None
            and parent.u is None
            and parent.work == work
            and np.array_equal(parent.target, self.target)
        ):
            self._from_parent(parent, idx)
            return
        # gathered, projected and cast chunk by chunk: 4,096 rows (10 MB) at a time, which stay in
        # cache; 65,536-row float64 temporaries (157 MB each, fresh pages) cost 8× more here
        kept = None if self.data is None else self.data.work(work)
        if isinstance(z, PairDifferences):  # pairs built when a pass reads them: no n × d copy
            self.zw = z.mapped(self.u, work).take(idx)
        elif kept is not None and rows is None:
            self.zw = self.data.blocked(PairBlocks.keys(y), idx, work)  # remembered there
        else:
            source = z if kept is None else kept
            self.zw = np.empty((idx.size, r), dtype=work)
            for start in range(0, idx.size, 4096):
                block = source[idx[start : start + 4096]]
                self.zw[start : start + 4096] = block if self.u is None else block @ self.u
        # Penalty metric: the curvature-weighted second moment at the prior (the Fisher weights
        # of the pair model there), so that (β/2)·tr(WΔWΔ) approximates β × the KL divergence
        # from the prior's response model, and equals the solver's first preconditioner.
        c = float(self.target[0, 0])
        if sq is not None and self.u is None and np.array_equal(self.target, c * np.eye(d)):
            self.d_prior = c * sq[idx]
        else:
            self.d_prior = self.distances(self.target)
        # (curvature capped at its pair-weighted 99th percentile, then weighted)
        self.h = curvature(self.d_prior, self.blocks.y)
        self.h_cap = _weighted_quantile(self.h, self.w, 0.99)
        self._gram_h = weighted_gram(self.zw, np.minimum(self.h, self.h_cap) * self.w)
        self.weight = symmetrize(self._gram_h / self.zw.shape[0])

    def _from_parent(self, parent: Problem, idx: np.ndarray) -> None:
        """Rows, prior distances and penalty metric of a subset of ``parent``'s pairs.

        ``n_t·W_t = Σ_train min(h, q_t)·w_t·zzᵀ`` is the parent's ``Σ_all min(h, q)·w·zzᵀ``
        minus its held-out rows, plus the few rows whose cap differs (h above min(q, q_t)),
        times the weights' rescaling ``w_t = c·w``.
        """
        where = np.empty(parent.rows.size, dtype=np.int64)
        where[parent.rows] = np.arange(parent.rows.size)
        pos = where[idx]  # rows of parent.zw, in this problem's order
        if parent.data is not None and parent.rows.size == parent.data.n:
            key = np.full(parent.rows.size, -1, dtype=np.int8)  # -1: held out
            key[idx] = PairBlocks.keys(self.blocks.y)
            self.zw = parent.data.blocked(key, idx, parent.zw.dtype)  # remembered there
        else:
            self.zw = take_rows(parent.zw, pos)
        self.d_prior = parent.d_prior[pos]
        self.h = parent.h[pos]
        self.h_cap = _weighted_quantile(self.h, self.w, 0.99)
        out = np.ones(parent.rows.size, dtype=bool)
        out[pos] = False
        held = np.flatnonzero(out)
        pw = parent.w
        gram = parent._gram_h - weighted_gram(
            take_rows(parent.zw, held), np.minimum(parent.h[held], parent.h_cap) * pw[held]
        )
        wp = pw[pos]
        differ = np.flatnonzero(self.h > min(parent.h_cap, self.h_cap))
        if differ.size:
            change = np.minimum(self.h[differ], self.h_cap) - np.minimum(
                self.h[differ], parent.h_cap
            )
            gram += weighted_gram(take_rows(self.zw, differ), change * wp[differ])
        self._gram_h = gram * (float(np.sum(self.w)) / float(np.sum(wp)))  # w_t = c·w
        self.weight = symmetrize(self._gram_h / self.zw.shape[0])
        self.h = None  # only a parent's curvature is read again (by its subsets)

    def release(self) -> None:
        """Drop the per-pair arrays but ``rows`` when pairs come as ``PairDifferences`` (bounded
        memory: the problem on all pairs waits while its folds fit); ``restore`` rebuilds them,
        to the same numbers."""
        if isinstance(self._args[0], PairDifferences):
            for name in ("zw", "w", "blocks", "d_prior", "h"):
                self.__dict__.pop(name, None)

    def restore(self) -> None:
        if "zw" not in self.__dict__:
            self.__init__(*self._args)

    def distances(self, s: np.ndarray) -> np.ndarray:
        """``z_iᵀSz_i`` in this problem's row order (``S`` on the span), as ``quad_forms`` on
        ``zw``; on all pairs of a ``Differences`` (``data``) through its remembered distances."""
        if self.data is None or self.rows.size != self.data.n:
            return quad_forms(self.zw, s)
        dist = self.data.distances(s, self.zw.dtype)
        return dist if self.zw is self.data.work(self.zw.dtype) else dist[self.rows]

    def to_span(self, sigma: np.ndarray) -> np.ndarray:
        return sigma if self.u is None else self.u.T @ sigma @ self.u

    def full(self, s: np.ndarray) -> np.ndarray:
        """``U S Uᵀ + (I - UUᵀ) Π (I - UUᵀ)``: the fit on the span, the prior outside it."""
        if self.u is None:
            return s
        out = self.u @ s @ self.u.T
        rest = np.eye(self.d) - self.u @ self.u.T
        return symmetrize(out + rest @ self.prior @ rest)

    def white_top(self, s: np.ndarray) -> float:
        """Largest eigenvalue of ``C^{1/2} S C^{1/2}`` (the typical pair distance along the top
        direction)."""
        root = sqrtm_psd(self.second)
        return float(np.linalg.eigvalsh(symmetrize(root @ symmetrize(s) @ root))[-1])

    def solve(
        self,
        beta: float,
        start: np.ndarray,
        cap: float,
        tol: float,
        max_iter: int,
        t0: float | None = None,
        d0: np.ndarray | None = None,
    ):
        return _explore_solver.solve(
            self.zw,
            self.blocks,
            start,
            cap=cap,
            tol=tol,
            max_iter=max_iter,
            ridge=beta,
            second=self.weight,
            target=self.target,
            t0=t0,
            d0=d0,
        )


def fit_warnings(
    full: Problem,
    s_span: np.ndarray,
    w: np.ndarray,
    cap: float,
    beta: float,
    path_says: bool | None,
    converged: bool,
    n_iter: int,
    notes: list[str],
) -> bool:
    """``bound_active_`` of the fit ``s_span`` (eigenvalues ``w``) on ``full``, and its readable
    warnings appended to ``notes`` (``explore.py``'s module docstring, "safeguards").
    ``path_says``: whether the penalty search read separation (``alpha="auto"``); None with a
    fixed alpha, where the whitened top eigenvalue above ``SEPARATION_LEVEL`` says it."""
    bound = False
    if full.r < full.d:
        notes.append(
            f"the pair differences span {full.r} of {full.d} dimensions; in the other "
            f"{full.d - full.r} directions Sigma is the prior (no data there)"
        )
    if np.isfinite(cap) and w.size and w[-1] >= cap * (1.0 - 1e-6):
        bound = True
        notes.append(f"the eigenvalue bound {cap:.4g} is active: the fit is capped")
    top = full.white_top(s_span)
    separated = top > SEPARATION_LEVEL if path_says is None else path_says
    if separated:
        bound = True
        notes.append(
            "the data (nearly) separate comparable from incomparable pairs: Sigma keeps "
            f"growing as the penalty weakens (typical pair distance along the top direction "
            f"{top:.3g}); it is finite only because of the penalty (alpha = {beta:.3g})"
            + (" or the bound" if np.isfinite(cap) else "")
        )
    if not converged:
        notes.append(f"the solver stopped after {n_iter} iterations without converging")
    return bound
