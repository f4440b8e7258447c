"""EXPLORE's per-pair log-likelihood, its derivatives in ``d``, pair-block bookkeeping, the
pairs' distances ``z_iᵀΣz_i`` and weighted means of per-pair figures (with a 95 % interval).

Every pass over the pair differences ``z`` reads it ``chunk`` rows at a time (slices, or index
arrays cut into chunks before indexing), so ``z`` may be a memory-mapped array or
:class:`PairDifferences` (``z_i = x[a_i] - x[b_i]`` built chunk by chunk): the memory of a pass is
O(chunk · d + d²) beyond the per-pair vectors, whatever the number of pairs.
:func:`loglik_and_gradient` is the loss/gradient pass in one sweep (benchmarks/growth.py runs it
over 10⁷ pairs at d = 50).

For a pair with squared metric distance ``d = zᵀΣz`` and label ``y ∈ [0, 1]`` (1 comparable)::

    ℓ(d, y) = y · log(2σ(-d)) + (1 - y) · log(1 - 2σ(-d))
            = y · (log 2 - softplus(d)) + (1 - y) · log(tanh(d / 2))

Stable forms: ``softplus(d) = logaddexp(0, d)``;
``log tanh(d/2) = log(-expm1(-d)) - log1p(exp(-d))`` (accurate for tiny and huge ``d``);
``d/dd log tanh(d/2) = 1/sinh(d) = 2e^{-d} / (-expm1(-2d))`` (no overflow).
``log tanh(d/2)`` tends to -inf as d → 0 (an "incomparable" pair at distance zero), so below
``D_FLOOR`` it is continued by its tangent at ``D_FLOOR``: the continuation is still concave and
C¹, finite for identical pairs (z = 0), and changes nothing for pairs with ``d ≥ D_FLOOR``.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .psd import symmetrize

D_FLOOR = 1e-8
GRAM_CHUNK = 16384  # rows per SYRK in ``weighted_gram``
PASS_CHUNK = 65536  # rows of z per step of ``loglik_and_gradient``
CURVE_CHUNK = 65536  # pairs per step of ``PairBlocks.loglik_and_slope`` and ``curvature``
LOG2 = float(np.log(2.0))


def log_two_sigmoid_neg(d: np.ndarray, slope: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """``log(2σ(-d)) = log 2 - softplus(d)`` and its derivative ``-σ(d)``, for ``d ≥ 0``.

    Negative ``d`` (rounding of a PSD quadratic form) is read as 0.
    """
    d = np.maximum(d, 0.0)
    e = np.exp(-d)
    val = LOG2 - d - np.log1p(e)
    return val, (-1.0 / (1.0 + e) if slope else None)


def log_tanh_half(d: np.ndarray, slope: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """``log(tanh(d/2))`` and its derivative ``1/sinh(d)``, tangent-continued below ``D_FLOOR``.

    With ``e = exp(-d)`` and ``m = -expm1(-d) = 1 - e`` (accurate for tiny d):
    ``log tanh(d/2) = log(1 - e) - log1p(e)``, with ``log(1 - e)`` as ``log(m)`` for small d and
    ``log1p(-e)`` for large d (relative accuracy at both ends); ``1/sinh(d) = 2e / (m (1 + e))``.
    """
    dd = np.maximum(d, D_FLOOR)
    e = np.exp(-dd)
    m = -np.expm1(-dd)
    der = 2.0 * e / (m * (1.0 + e))
    val = np.where(e < 0.5, np.log1p(-e), np.log(m)) - np.log1p(e)
    below = d < D_FLOOR
    if np.any(below):
        val = val + der * (np.minimum(d, D_FLOOR) - D_FLOOR)
    return val, (der if slope else None)


def curvature(d: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``-∂²ℓ/∂d²`` ≥ 0 (at ``max(d, D_FLOOR)``): ``yσ(d)σ(-d) + (1-y)cosh(d)/sinh²(d)``."""
    dd = np.maximum(d, D_FLOOR)
    e = np.exp(-dd)
    h1 = expit(dd) * expit(-dd)
    h0 = 2.0 * e * (1.0 + e * e) / np.expm1(-2.0 * dd) ** 2
    return y * h1 + (1.0 - y) * h0


def pair_slope(d: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-pair ``∂ℓ/∂d`` (``-σ(d)`` for y = 1, ``1/sinh(d)`` for y = 0, mixed for soft y)."""
    return y * log_two_sigmoid_neg(d)[1] + (1.0 - y) * log_tanh_half(d)[1]


def pair_loglik(d: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-pair log-likelihood ``ℓ(d, y)`` (finite for every ``d`` and ``y ∈ [0, 1]``)."""
    d = np.asarray(d, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return y * log_two_sigmoid_neg(d)[0] + (1.0 - y) * log_tanh_half(d)[0]


@dataclass(frozen=True)
class PairBlocks:
    """Pairs sorted as [y == 1 | y == 0 | 0 < y < 1]; the blocks are slices of the sorted arrays."""

    y: np.ndarray  # sorted labels, float64
    n1: int
    n0: int
    w: np.ndarray | None = None  # sorted pair weights (mean 1), None: all 1

    @property
    def n(self) -> int:
        return int(self.y.size)

    @property
    def ones(self) -> slice:
        return slice(0, self.n1)

    @property
    def zeros(self) -> slice:
        return slice(self.n1, self.n1 + self.n0)

    @property
    def soft(self) -> slice:
        return slice(self.n1 + self.n0, self.n)

    @staticmethod
    def keys(y: np.ndarray) -> np.ndarray:
        """Each pair's block: 0 (y = 1), 1 (y = 0), 2 (soft)."""
        return np.where(y == 1.0, 0, np.where(y == 0.0, 1, 2)).astype(np.int8)

    @staticmethod
    def order(y: np.ndarray) -> np.ndarray:
        """Stable permutation that sorts pairs into the three blocks (three O(n) scans: the
        stable argsort's permutation, without a sort at every problem of every refit)."""
        key = PairBlocks.keys(y)
        return np.concatenate([np.flatnonzero(key == b) for b in range(3)])

    @classmethod
    def from_sorted(cls, y_sorted: np.ndarray, w_sorted: np.ndarray | None = None) -> PairBlocks:
        n1, n0 = int(np.sum(y_sorted == 1.0)), int(np.sum(y_sorted == 0.0))
        return cls(y=y_sorted, n1=n1, n0=n0, w=w_sorted)

    def curvature(self, d: np.ndarray) -> np.ndarray:
        """Per-pair ``-∂²(wℓ)/∂d²`` for sorted distances ``d`` (``CURVE_CHUNK`` at a time: its
        temporaries stay small)."""
        h = np.empty(d.size)
        for a in range(0, d.size, CURVE_CHUNK):
            part = slice(a, a + CURVE_CHUNK)
            h[part] = curvature(d[part], self.y[part])
        return h if self.w is None else np.multiply(h, self.w, out=h)

    def loglik_and_slope(
        self, d: np.ndarray, slope: bool = True
    ) -> tuple[float, np.ndarray | None]:
        """Mean log-likelihood and per-pair ``∂ℓ/∂d`` for sorted distances ``d``, each block
        ``CURVE_CHUNK`` pairs at a time (the temporaries of the logs stay small)."""
        w, total = self.w, 0.0
        g = np.empty_like(d) if slope else None
        for block, terms in ((self.ones, 1), (self.zeros, 0), (self.soft, None)):
            for a in range(block.start, block.stop, CURVE_CHUNK):
                part = slice(a, min(a + CURVE_CHUNK, block.stop))
                if terms is None:  # soft labels: both terms, weighted by the label
                    ys = self.y[part]
                    l1, g1 = log_two_sigmoid_neg(d[part], slope)
                    l0, g0 = log_tanh_half(d[part], slope)
                    lp = ys * l1 + (1.0 - ys) * l0
                    gp = ys * g1 + (1.0 - ys) * g0 if slope else None
                else:
                    lp, gp = (log_two_sigmoid_neg if terms else log_tanh_half)(d[part], slope)
                total += float(lp.sum() if w is None else lp @ w[part])
                if slope:
                    g[part] = gp if w is None else gp * w[part]
        return total / self.n, g

    def loglik(self, d: np.ndarray) -> float:
        return self.loglik_and_slope(d, slope=False)[0]


def weighted_gram(z: np.ndarray, w: np.ndarray, blocks: PairBlocks | None = None) -> np.ndarray:
    """``Zᵀ diag(w) Z`` in float64, as a difference of two symmetric rank-k updates (SYRK).

    ``w`` may have either sign; ``blocks`` tells which rows are known to have w ≤ 0 (y = 1) or
    w ≥ 0 (y = 0), so that only the soft-label rows need a sign split.
    """
    out = np.zeros((z.shape[1], z.shape[1]))

    def add(rows: np.ndarray | slice, sign: float) -> None:
        # one SYRK per GRAM_CHUNK rows, summed in float64 (small temporaries stay in cache); the
        # rows are cut into chunks before z is indexed: z is never copied whole
        if isinstance(rows, slice):
            rows = range(*rows.indices(z.shape[0]))
        for start in range(0, len(rows), GRAM_CHUNK):
            part = rows[start : start + GRAM_CHUNK]
            if isinstance(part, range):
                part = slice(part.start, part.stop)
            root = np.sqrt(np.abs(w[part])).astype(z.dtype, copy=False)
            a = np.asarray(z[part]) * root[:, None]
            out.__iadd__(sign * (a.T @ a).astype(np.float64))

    if blocks is None and w.min(initial=0.0) >= 0.0:  # slices, no gather (zero rows add 0)
        add(slice(0, z.shape[0]), 1.0)
        return out
    if blocks is None:
        add(np.flatnonzero(w > 0), 1.0)
        add(np.flatnonzero(w < 0), -1.0)
        return out
    add(blocks.ones, -1.0)
    add(blocks.zeros, 1.0)
    soft = np.arange(blocks.n1 + blocks.n0, blocks.n)
    if soft.size:
        add(soft[w[soft] > 0], 1.0)
        add(soft[w[soft] < 0], -1.0)
    return out


def quad_forms(z: np.ndarray, sigma: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """``d_i = z_iᵀ Σ z_i`` for every row, in float64 (products in ``z.dtype``, chunked)."""
    s = np.asarray(sigma, dtype=z.dtype)
    out = np.empty(z.shape[0])
    for start in range(0, z.shape[0], chunk):
        zc = np.asarray(z[start : start + chunk])
        out[start : start + chunk] = np.einsum("ij,ij->i", zc @ s, zc)
    return out


class PairDifferences:
    """The rows ``z_i = x[a_i] - x[b_i]`` of a set of pairs, built when a pass asks for them
    (a slice or an index array of rows): for a pass, it stands where the (n, d) array would,
    at the cost of the item matrix ``x`` and two index vectors. ``dtype``: the rows' type
    (default ``x``'s): built in ``x``'s precision, then cast, as an array of differences is."""

    def __init__(self, x: np.ndarray, a: np.ndarray, b: np.ndarray, dtype=None) -> None:
        self.x, self.a, self.b = x, np.asarray(a), np.asarray(b)
        self.shape = (self.a.size, x.shape[1])
        self.dtype = np.dtype(x.dtype if dtype is None else dtype)
        self.ndim = 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        return (self.x[self.a[rows]] - self.x[self.b[rows]]).astype(self.dtype, copy=False)

    def take(self, rows: np.ndarray) -> PairDifferences:
        """The pairs ``rows`` (still built when a pass asks for them)."""
        return PairDifferences(self.x, self.a[rows], self.b[rows], self.dtype)

    def mapped(self, m: np.ndarray | None, dtype) -> PairDifferences:
        """The same pairs of ``x @ m`` (``m`` None: ``x``) as ``dtype`` rows: ``z_i m =
        x[a]m - x[b]m``."""
        return PairDifferences(self.x if m is None else self.x @ m, self.a, self.b, dtype)


def take_rows(z, rows: np.ndarray):
    """Rows ``rows`` of an array (a copy) or of ``PairDifferences`` (pairs, built on demand)."""
    return z.take(rows) if isinstance(z, PairDifferences) else z[rows]


def row_norms(z, chunk: int = 65536) -> np.ndarray:
    """``‖z_i‖²`` per row in float64, ``chunk`` rows at a time."""
    out = np.empty(z.shape[0])
    for start in range(0, z.shape[0], chunk):
        zc = np.asarray(z[start : start + chunk])
        out[start : start + chunk] = np.einsum("ij,ij->i", zc, zc, dtype=np.float64)
    return out


def loglik_and_gradient(
    z, sigma: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, chunk: int = PASS_CHUNK
) -> tuple[float, np.ndarray]:
    """EXPLORE's loss/gradient pass in one sweep over ``z``, ``chunk`` rows at a time: the mean
    log-likelihood ``(1/n) Σ w_i ℓ(z_iᵀΣz_i, y_i)`` and its gradient in Σ,
    ``(1/n) Σ w_i ℓ'(d_i, y_i) z_i z_iᵀ`` (float64). The same figures as the solver's
    ``PairBlocks.loglik_and_slope`` and ``weighted_gram`` over the whole array (tested), in
    O(chunk · d + d²) memory beyond ``y`` and ``w``: ``z`` may be memory-mapped or
    :class:`PairDifferences`."""
    n, dim = z.shape
    s = np.asarray(sigma, dtype=z.dtype)
    total, grad = 0.0, np.zeros((dim, dim))
    for start in range(0, n, chunk):
        zc = np.asarray(z[start : start + chunk])
        d = np.einsum("ij,ij->i", zc @ s, zc).astype(np.float64)  # as quad_forms
        yc = np.asarray(y[start : start + chunk], dtype=np.float64)
        ll, slope = pair_loglik(d, yc), pair_slope(d, yc)
        if w is not None:
            wc = np.asarray(w[start : start + chunk], dtype=np.float64)
            ll, slope = ll * wc, slope * wc
        total += float(ll.sum())
        grad += weighted_gram(zc, slope)
        _release(z, start, start + zc.shape[0])
    return total / n, grad / n


def _release(z, start: int, stop: int) -> None:
    """Rows ``[start, stop)`` of a read-only memory-mapped ``z`` (``np.load(…, mmap_mode="r")``)
    leave the resident set (``MADV_DONTNEED``; read again from the file if asked): a pass over a
    mapped file then holds one chunk of it, not the whole file, in its RSS. Anything else: no-op."""
    mm = getattr(z, "_mmap", None)
    if not (
        isinstance(mm, mmap.mmap)
        and z.base is mm
        and getattr(z, "mode", "") == "r"
        and z.flags.c_contiguous
        and hasattr(mmap, "MADV_DONTNEED")
    ):
        return
    shift = z.offset % mmap.ALLOCATIONGRANULARITY  # the mapping starts on a granule
    begin, end = shift + start * z.strides[0], min(len(mm), shift + stop * z.strides[0])
    begin -= begin % mmap.PAGESIZE
    if end > begin:
        mm.madvise(mmap.MADV_DONTNEED, begin, end - begin)


def psd_quad_forms(z: np.ndarray, sigma: np.ndarray, chunk: int = 16384) -> np.ndarray:
    """``z_iᵀΣz_i`` in ``z``'s precision for PSD ``Σ``, as ``‖z_i V_K diag(√λ_K)‖²`` over the
    positive eigenvalues: n·d·rank work instead of n·d² when Σ is low-rank (a fit whose
    eigenvalues the PSD projection clipped)."""
    w, v = np.linalg.eigh(symmetrize(sigma))
    pos = w > 0.0
    if np.sum(pos) > 0.8 * w.size:
        return np.maximum(quad_forms(z, sigma), 0.0)
    f = (v[:, pos] * np.sqrt(w[pos])).astype(z.dtype)
    out = np.empty(z.shape[0])
    for start in range(0, z.shape[0], chunk):
        zf = z[start : start + chunk] @ f
        out[start : start + chunk] = np.einsum("ij,ij->i", zf, zf)
    return out


def weighted_mean(values: np.ndarray, w: np.ndarray) -> float:
    return float(np.dot(values, w) / np.sum(w))


def _se(values: np.ndarray, w: np.ndarray) -> float:
    """Standard error of the weighted mean (equal weights: s/√m); inf below two values."""
    m = values.size
    if m < 2:
        return np.inf
    total = float(np.sum(w))
    mean = float(np.dot(values, w) / total)
    var = float(np.dot(w, (values - mean) ** 2)) / total * m / (m - 1)
    return float(np.sqrt(var * float(np.dot(w, w))) / total)


def weighted_mean_ci(
    values: np.ndarray, w: np.ndarray, folds: list[int] | None = None
) -> tuple[float, tuple[float, float]]:
    """Weighted mean and its 95 % interval (± 1.96 standard errors; equal weights: the usual).

    ``folds``: the sizes of consecutive blocks of ``values`` that one fit each scored (held-out
    folds). Each fold's fit is then a random effect: the variance of the fold means beyond
    what their own pairs explain, ``τ² = max(0, var(m_k) − mean(se_k²))``, is added as
    ``τ²/K`` (method of moments, one-way random effects). The figure estimates a fit's
    expected score, and one fit's score varies with its training pairs too (measured in
    ``benchmarks/coverage.py``: 93.5 % without this term at 500 pairs, 94.8 % with it)."""
    mean = weighted_mean(values, w)
    se = _se(values, w)
    if folds is not None and len(folds) > 1 and np.isfinite(se):
        cuts = np.cumsum(folds)[:-1]
        parts = [
            (v, u)
            for v, u in zip(np.split(values, cuts), np.split(w, cuts), strict=True)
            if u.sum() > 0
        ]
        means = np.array([weighted_mean(v, u) for v, u in parts])
        own = np.array([_se(v, u) ** 2 for v, u in parts])
        if len(parts) > 1 and np.all(np.isfinite(own)):
            tau2 = max(0.0, float(np.var(means, ddof=1) - own.mean()))
            se = float(np.sqrt(se * se + tau2 / len(parts)))
    return mean, (mean - 1.96 * se, mean + 1.96 * se)


def paired_gains(
    per_pair: np.ndarray, baselines: dict, w: np.ndarray, folds: list[int] | None = None
) -> dict:
    """For each named baseline (per-pair log-likelihoods on the same held-out pairs as
    ``per_pair``, weights ``w``): its weighted mean log-likelihood, and the fit's mean gain over
    it per pair with a 95 % interval (paired: the same pairs score both, so the interval is
    that of the differences, much narrower than either figure's own; ``folds``: as in
    ``weighted_mean_ci``)."""
    out = {}
    for name, base in baselines.items():
        gain, gain_ci = weighted_mean_ci(per_pair - base, w, folds)
        out[name] = {"loglik": weighted_mean(base, w), "gain": gain, "gain_ci": gain_ci}
    return out


def prior_distances(z: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``zᵢᵀ Π zᵢ ≥ 0`` per row; a scaled identity (the default prior) as ``c·‖zᵢ‖²``, O(n·d)."""
    c = float(prior[0, 0])
    if np.array_equal(prior, c * np.eye(prior.shape[0])):
        return c * row_norms(z)
    return np.maximum(quad_forms(z, prior), 0.0)
