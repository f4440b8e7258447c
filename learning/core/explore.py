"""EXPLORE: a Mahalanobis fair metric learned from pairs labelled comparable / incomparable.

Model (the seed paper's binary response model)::

    P(y = 1 | z) = 2σ(-d),    d = zᵀΣz,    z = φ(x₁) - φ(x₂),    Σ ≽ 0,

fitted by maximising the concave mean log-likelihood

    ℓ(Σ) = (1/n) Σ_i [ y_i log(2σ(-d_i)) + (1 - y_i) log(1 - 2σ(-d_i)) ]
         = (1/n) Σ_i [ y_i (log 2 - softplus(d_i)) + (1 - y_i) log tanh(d_i / 2) ]

over PSD matrices, with the safeguards below. Labels may be soft (``y ∈ [0, 1]``, e.g. 0.5 for
"unsure"): the objective is then the expected log-likelihood, still concave. Pairs may carry
weights (``sample_weight ≥ 0``, scaled to mean 1): every mean over pairs — the objective, the
penalty metric ``W`` (its curvature cap is the weighted 99th percentile), the prior's scale,
``loglik_`` and the held-out figures with their interval — is then the weighted mean, so an
integer weight k is the pair repeated k times and a weight 0 drops it.

Null space and prior. The likelihood depends on Σ only through ``UᵀΣU``, ``U`` an orthonormal
basis of the span of the differences (eigenvectors of ``C = ZᵀZ/n`` with eigenvalue above
``SPAN_RTOL = 1e-10`` × the largest; ``n_constrained_ = dim U``). The fit lives on that span
(``r × r`` in the coordinates ``Zu``), and outside it Σ is the prior:
``Σ = U S Uᵀ + (I - UUᵀ) Π (I - UUᵀ)``. ``Π = prior_scale_ · prior`` (``prior`` given by the
caller, e.g. the study's FACE metric, else the identity); ``prior_scale="auto"`` takes the
scalar maximising the likelihood of ``c·prior`` (for the identity: the best isotropic metric).
So directions no pair explores get the prior, never a cap or a blown-up start.

Regularisation. Maximise ``ℓ(Σ) - (β/2)·tr(WΔWΔ)`` with ``Δ = Σ - Π`` (on the span) and ``W``
the curvature-weighted second moment of the differences at the prior (``W = mean_i h_i z_i
z_iᵀ``, ``h = -∂²ℓ/∂d²`` at ``d = zᵀΠz``): a quadratic approximation of ``β`` times the
divergence between the pair models of Σ and of the prior, invariant to linear changes of the
embedding coordinates. It shrinks toward the prior, keeps every answer finite (strongly concave
objective, so separable data no longer need a cap) and is the solver's own geometry (fast).
``alpha="auto"`` (default) chooses ``β`` by held-out log-likelihood on stratified, deterministic
validation folds (5 below 2,000 pairs or while pairs × d ≤ 500,000, else one 80/20 split:
``kfold_validation``; or the caller's ``validation``),
starting from a James–Stein-type estimate ``β₀ = 10 · 2·noise / (signal - noise)``
(``signal``: the Newton decrement of the likelihood at the prior; ``noise = p/(2·n_train)``,
``p = r(r+1)/2``; see ``_start_strength``), never below the floor ``β = 1/n``; path fits use
tol 1e-3 and at most 60 iterations (a fold fit of the one-split ray at most ``RAY_MAX_ITER``:
it only places the ray, and the ray's first-order condition holds for any base point).

* Several folds (small data, fits are cheap): a path ``β₀·10^{±k}``, each fit warm-started from
  the previous one (or the prior when the penalty grows, whichever is better), walking in the
  improving direction until the held-out gain falls below 1e-5.
* One split (large data): a fit ``S₀`` at ``β₀`` on the training part, then the *ray*
  ``Π + s·(S₀ - Π)``: distances are linear in ``s``, so the validation log-likelihood along it
  is concave in one variable and its maximiser ``s_v`` is found by bisection (O(n) per step);
  ``β̂`` is the penalty whose training optimum restricted to the ray lies at ``s_v`` (the ray's
  first-order condition ``ℓ_T'(s_v) = β̂·s_v·tr(WΔ₀WΔ₀)``, ``Δ₀ = S₀ - Π``: closed form). For a
  quadratic likelihood with the whitened Hessian the penalised path *is* this ray (shrinkage
  toward Π by ``(2+β₀)/(2+β)``), so one fit replaces a decade path. When ``β̂`` lands more than
  3× from the fitted penalty the training part is refitted at ``β̂`` (from the ray's point) and
  the ray read again (at most 4 fits). The held-out figures are those of the ray's point
  ``Π + s_v·Δ₀`` (fitted on the training part; one scalar tuned on the validation pairs).

When ``n_train ≥ 50 · r(r+1)/2`` (n ≫ d²) the search is skipped and ``β = 1/n`` (≈ the MLE).
The final fit uses all pairs at the chosen ``β`` (``alpha_``; ``alpha_path_`` lists (β,
held-out loglik) tried), started from the validation fit or the prior, whichever has the better
objective. A float ``alpha`` fixes ``β`` (0: plain MLE).

Held-out likelihood. ``heldout_loglik_`` is the mean per-pair log-likelihood of the validation
pairs under the fits that did not see them, at the chosen ``β``; ``heldout_loglik_ci_`` a 95 %
interval (± 1.96 per-pair standard errors); ``heldout_n_`` the number of validation pairs;
``heldout_distances_`` each validation pair's distance under that fit (NaN for pairs never
held out: AUCs and other held-out scores need no second fit). It
estimates how a fit on ~80 % of the data generalises (slightly pessimistic for the final fit).
Two versions differ beyond noise when their intervals do not overlap (conservative).

Safeguards. ``max_eigenvalue`` (default None) is an optional hard bound on the fitted part's
spectrum (``"auto"`` = the former ``100·d / mean‖z‖²``). ``bound_active_`` is True, with a
readable line in ``warnings_``, when a bound binds or when the data (nearly) separate the labels:
with ``alpha="auto"`` when the chosen ``β`` is the floor and the top whitened eigenvalue
(``C^{1/2} S C^{1/2}``: the typical pair distance along the top direction) still grows by more
than 5 % from the previous ``β`` on the path; with a fixed ``alpha`` when that eigenvalue exceeds
10. ``warnings_`` also says when the differences span fewer than ``d`` directions and when the
solver did not converge. Below ``MIN_ANSWERS = 20`` answers, or with one label missing, ``fit``
raises ``ValueError``; ``explore_shortfall(y)`` says what is missing.

Solver: preconditioned FISTA on the full batch (see ``_explore_solver``); the preconditioner is
built from an eigendecomposition (floored), so singular or float32-rounded Gram matrices cannot
fail. The unpenalised fit starts from the best of ``c·I`` and ``c·C⁻¹`` on the span; penalised
fits start from the prior or a warm start, whichever has the better objective. Stopping rule:
two consecutive steps each gain at most ``tol`` (default 1e-4; 1e-3 on the path) of the
objective and a further projected-gradient step could promise no more than ``tol``.
``precision="mixed"`` (default) runs the n×d products in float32 and reports ``loglik_``
recomputed in float64; ``"double"`` runs in float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from . import _explore_solver
from ._pairloss import PairBlocks, curvature, pair_loglik, pair_slope, quad_forms, weighted_gram
from ._validation import (
    check_explore_params,
    check_float_matrix,
    check_labels,
    check_validation,
    check_weights,
    differences,
)
from .psd import projector, sqrtm_psd, symmetrize, validate_sigma

__all__ = [
    "EXPLORE",
    "ExploreShortfall",
    "explore_shortfall",
    "kfold_validation",
    "pair_loglik",
]

AUTO_CAP_FACTOR = 100.0
MIN_ANSWERS = 20  # explore_shortfall: answers needed, with both labels present
SPAN_RTOL = 1e-10  # second-moment eigenvalues ≤ SPAN_RTOL·max are directions the data miss
KFOLD_BELOW = 2000  # below this many pairs: N_FOLDS-fold validation (``kfold_validation``)
KFOLD_MAX_WORK = 500_000  # ... and while pairs × dimension stays at most this; else one split
N_FOLDS = 5
VALIDATION_FRACTION = 0.2
PATH_START = 10.0  # first penalty on the path: PATH_START × a James–Stein-type estimate
PATH_MAX = 1e6
LARGE_N_RATIO = 50.0  # pairs per parameter from which the path is skipped (penalty at its floor)
PATH_MIN_GAIN = 1e-5  # a path step must gain this much held-out loglik to continue
PATH_TOL = 1e-3  # solver tolerance on the path (the final fit uses ``tol``)
PATH_MAX_ITER = 60  # iteration limit of each path fit (model selection only; final fit: max_iter)
SEPARATION_LEVEL = 10.0  # whitened eigenvalue read as "data separate" for a fixed alpha
FLOOR_GROWTH = 0.05  # whitened top eigenvalue growth at the path's floor that flags separation
RAY_S_MAX = 100.0  # furthest point tried on the ray, in multiples of the first fit's departure
RAY_RATIO = 3.0  # the ray's penalty within this factor of the fitted one: accepted
RAY_ROUNDS = 4  # at most this many fold fits on the one-split ray search
RAY_MAX_ITER = 4  # iteration limit of a fold fit on the ray search (it only places the ray)


def _second_moment(z: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``ZᵀZ/n`` in float64 (chunked)."""
    out = np.zeros((z.shape[1], z.shape[1]))
    for start in range(0, z.shape[0], chunk):
        zc = z[start : start + chunk]
        out += zc.T @ zc
    return symmetrize(out / z.shape[0])


def _psd_quad_forms(z: np.ndarray, sigma: np.ndarray, chunk: int = 16384) -> np.ndarray:
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


def _clip(s: np.ndarray, cap: float) -> np.ndarray:
    w, v = np.linalg.eigh(symmetrize(s))
    return symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)


def _start_strength(prob) -> float:
    """James–Stein-type first penalty of the path: ``PATH_START · 2·noise / (signal - noise)``.

    ``signal = ‖G‖²/4`` is the Newton decrement at the prior (``G`` the log-likelihood gradient
    in the penalty's whitened coordinates, where the Hessian is about ``2·I``), ``noise =
    p/(2n)`` the expected excess of a p-parameter MLE; the shrinkage weight ``noise/signal``
    corresponds to ``β = 2·noise/(signal - noise)``. ``PATH_START = 10`` (measured: the held-out
    optimum was 3-20 times this estimate on the benchmark data).
    """
    n = prob.zw.shape[0]
    _, slope = prob.blocks.loglik_and_slope(prob.d_prior)
    g = weighted_gram(prob.zw, slope, prob.blocks) / n
    w, v = np.linalg.eigh(prob.weight)
    wi = (v / np.sqrt(np.maximum(w, 1e-12 * max(float(w[-1]), np.finfo(float).tiny)))) @ v.T
    gm = wi @ g @ wi
    signal = float(np.sum(gm * gm)) / 4.0
    noise = prob.r * (prob.r + 1) / 4.0 / n
    return PATH_START * 2.0 * noise / max(signal - noise, noise / 100.0)


def _better_start(prob, beta: float, starts: list) -> tuple[np.ndarray, np.ndarray]:
    """The start with the smaller penalised objective ``-ℓ + (β/2) tr(CΔCΔ)`` on ``prob``, and
    its distances (the prior's are known: ``prob.d_prior``; a start given as ``(S, d)`` brings
    its own, in ``prob``'s row order)."""
    scale = float(np.max(np.abs(prob.target))) if prob.target.size else 0.0

    def distances(s: np.ndarray) -> np.ndarray:
        if np.max(np.abs(s - prob.target)) <= 1e-12 * max(scale, np.finfo(float).tiny):
            return prob.d_prior
        return quad_forms(prob.zw, s)

    best = None
    for start in starts:
        s, d = start if isinstance(start, tuple) else (start, None)
        delta = s - prob.target
        d = distances(s) if d is None else d
        val = -prob.blocks.loglik(d) + 0.5 * beta * float(
            np.sum((prob.weight @ delta @ prob.weight) * delta)
        )
        if best is None or val < best[0]:
            best = (val, s, d)
    return best[1], best[2]


def _white_top(prob, s: np.ndarray) -> float:
    """Largest eigenvalue of ``C^{1/2} S C^{1/2}`` (typical pair distance along the top direction)."""
    root = sqrtm_psd(prob.second)
    return float(np.linalg.eigvalsh(symmetrize(root @ symmetrize(s) @ root))[-1])


def _growth(scores: dict, probs: list, best: float, floor: float) -> float:
    """Relative growth of the whitened top eigenvalue between the two smallest penalties tried,
    when the chosen penalty is the floor (else 0)."""
    betas = sorted(scores)
    if best > floor * (1 + 1e-9) or len(betas) < 2:
        return 0.0
    a = _white_top(probs[0]["p"], scores[betas[0]][2][0])
    b = _white_top(probs[0]["p"], scores[betas[1]][2][0])
    return (a - b) / max(b, np.finfo(float).tiny)


def _ray_best(dp: np.ndarray, dd: np.ndarray, y: np.ndarray, w: np.ndarray, hi: float) -> float:
    """``argmax_{0 ≤ s ≤ hi} Σ w·ℓ(dp + s·dd, y)`` (concave in s): bisection on the slope."""

    def slope(s: float) -> float:
        return float(np.dot(pair_slope(np.maximum(dp + s * dd, 0.0), y) * dd, w))

    lo = 0.0
    if slope(hi) >= 0.0:
        return hi
    if slope(lo) <= 0.0:
        return lo
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if slope(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _ray_limit(sol: np.ndarray, delta: np.ndarray) -> float:
    """Largest ``s ≤ RAY_S_MAX`` with ``sol + (s - 1)·delta ≽ 0`` (``sol`` PSD; s ≤ 1 is safe)."""
    w, v = np.linalg.eigh(symmetrize(sol))
    top = max(float(w[-1]), np.finfo(float).tiny)
    inv = v / np.sqrt(np.maximum(w, 1e-12 * top))
    low = float(np.linalg.eigvalsh(symmetrize(inv.T @ delta @ inv))[0])
    u = RAY_S_MAX - 1.0 if low >= 0.0 else min(RAY_S_MAX - 1.0, -1.0 / low)
    for _ in range(40):  # the floored inverse can overstate u: check, and halve until PSD
        if np.linalg.eigvalsh(symmetrize(sol + u * delta))[0] >= -1e-10 * top:
            return 1.0 + u
        u *= 0.5
    return 1.0


def _ray_choice(prob, zv, yv, wv, beta0: float, sol: np.ndarray, floor: float) -> dict:
    """Strength from one fold fit (module docstring, "regularisation", one split).

    The fit ``S₀`` at ``β₀`` defines the ray ``S(s) = Π + s·(S₀ - Π)`` (s = 0 the prior, s = 1
    the fit). Distances are linear in ``s``, so the validation pairs' log-likelihood along it
    is a concave function of one variable: ``s_v`` maximises it. The penalty that puts the
    training optimum on the ray at ``s_v`` solves the ray's first-order condition
    ``ℓ_T'(s_v) = β·s_v·tr(WΔ₀WΔ₀)``, ``Δ₀ = S₀ - Π``: that is ``β̂``.
    """
    delta = symmetrize(sol - prob.target)
    q0 = float(np.sum((prob.weight @ delta @ prob.weight) * delta))
    hi = _ray_limit(sol, delta)
    full_delta = delta if prob.u is None else prob.u @ delta @ prob.u.T
    dp_v = quad_forms(zv, prob.full(prob.target))
    dd_v = quad_forms(zv, full_delta)
    s_v = _ray_best(dp_v, dd_v, yv, wv, hi)
    dp_t = prob.d_prior
    dd_t = quad_forms(prob.zw, delta)
    slope = float(
        np.dot(pair_slope(np.maximum(dp_t + s_v * dd_t, 0.0), prob.blocks.y) * dd_t, prob.w)
    )
    slope /= dd_t.size
    if q0 <= 0.0:
        beta = beta0
    elif s_v <= 1e-12:
        beta = PATH_MAX
    elif slope <= 0.0:
        beta = floor
    else:
        beta = float(np.clip(slope / (s_v * q0), floor, PATH_MAX))
    d_v = np.maximum(dp_v + s_v * dd_v, 0.0)
    return {
        "d_train": np.maximum(dp_t + s_v * dd_t, 0.0),  # in ``prob``'s row order
        "beta": beta,
        "s": s_v,
        "limit": hi,
        "distances": d_v,
        "per_pair": pair_loglik(d_v, yv),
        "at_fit": _wmean(pair_loglik(np.maximum(dp_v + dd_v, 0.0), yv), wv),
        "sigma": symmetrize(prob.target + s_v * delta),
    }


def _weighted_quantile(values: np.ndarray, w: np.ndarray, q: float) -> float:
    """The q-quantile of ``values`` counting each with weight ``w`` (equal weights: the lower
    of numpy's two nearest order statistics, close to ``np.quantile``)."""
    order = np.argsort(values)
    cum = np.cumsum(w[order])
    k = int(np.searchsorted(cum, q * cum[-1]))
    return float(values[order[min(k, values.size - 1)]])


def _wmean(values: np.ndarray, w: np.ndarray) -> float:
    return float(np.dot(values, w) / np.sum(w))


def _wmean_ci(values: np.ndarray, w: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Weighted mean and its 95 % interval (± 1.96 standard errors; equal weights: the usual)."""
    mean = _wmean(values, w)
    m = values.size
    if m < 2:
        return mean, (-np.inf, np.inf)
    total = float(np.sum(w))
    var = float(np.dot(w, (values - mean) ** 2)) / total * m / (m - 1)
    se = np.sqrt(var * float(np.dot(w, w))) / total
    return mean, (mean - 1.96 * se, mean + 1.96 * se)


def _best_scale(q: np.ndarray, y: np.ndarray, hi: float, w: np.ndarray) -> tuple[float, float]:
    """``argmax_{0 < c ≤ hi} mean w·ℓ(c·q, y)`` (concave in c): log grid, then golden section."""

    def loglik(c: float) -> float:
        return _wmean(pair_loglik(c * q, y), w)

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


@dataclass(frozen=True)
class ExploreShortfall:
    """What a label set lacks before EXPLORE can fit (all zeros: nothing is missing).

    ``need_comparable`` / ``need_incomparable``: answers of that label still required (at least
    one of each); ``need_any``: further answers of either label to reach ``MIN_ANSWERS``.
    """

    need_comparable: int
    need_incomparable: int
    need_any: int

    @property
    def ok(self) -> bool:
        return self.need_comparable == 0 and self.need_incomparable == 0 and self.need_any == 0

    @property
    def message(self) -> str:
        if self.ok:
            return "enough answers to fit EXPLORE"
        parts = []
        if self.need_comparable:
            parts.append(f"{self.need_comparable} comparable")
        if self.need_incomparable:
            parts.append(f"{self.need_incomparable} incomparable")
        if self.need_any:
            parts.append(f"{self.need_any} more of either kind")
        return (
            f"EXPLORE needs at least {MIN_ANSWERS} answers with both labels present; "
            "still missing: " + ", ".join(parts)
        )


def explore_shortfall(y: ArrayLike) -> ExploreShortfall:
    """What is missing before ``EXPLORE.fit`` accepts the labels ``y`` (1 comparable, 0 not).

    A label counts as comparable when ``y > 0.5``, incomparable when ``y < 0.5`` (0.5, "unsure",
    counts toward the total only). Rule: at least ``MIN_ANSWERS`` answers, one of each label.
    """
    lab = np.asarray(y, dtype=np.float64).ravel()
    n1, n0 = int(np.sum(lab > 0.5)), int(np.sum(lab < 0.5))
    need1, need0 = max(0, 1 - n1), max(0, 1 - n0)
    return ExploreShortfall(need1, need0, max(0, MIN_ANSWERS - lab.size - need1 - need0))


def kfold_validation(n_pairs: int, dim: int) -> bool:
    """The penalty's validation: ``N_FOLDS``-fold (True) below ``KFOLD_BELOW`` pairs or while
    ``n_pairs · dim ≤ KFOLD_MAX_WORK`` (there a fold fit costs tenths of a second), else one
    ``VALIDATION_FRACTION`` split read along the ray (large problems: one fit replaces a path).
    Measured (docs/core.md, "penalty validation"): on 2,560–3,620 pairs in d = 50 one split chose
    penalties 10–100× too strong (held-out −0.546 where five folds reached −0.519)."""
    return n_pairs < KFOLD_BELOW or n_pairs * dim <= KFOLD_MAX_WORK


def _folds(y: np.ndarray, kfold: bool, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
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


class _Problem:
    """One fitting problem in span coordinates (see the module docstring, "null space")."""

    def __init__(
        self,
        z: np.ndarray,
        y: np.ndarray,
        prior: np.ndarray,
        second: np.ndarray,
        precision: str,
        rows: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        parent: _Problem | None = None,
        sq: np.ndarray | None = None,
    ) -> None:
        """``rows``: the pairs of ``z`` (``y``, ``weights``) this problem uses (default: all).

        ``parent``: the problem on all pairs, when this one is a subset of it (a training part):
        when both live on all ``d`` coordinates, the rows, the prior's distances and the penalty
        metric are taken from it (exactly the same numbers, no n×d² product and no gather from
        the float64 differences). ``sq``: the squared norms ``‖z_i‖²`` (optional): with a scaled
        identity prior they are its distances (no n×d² product).
        """
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
        self.rows = idx  # the pair (row of ``z``) behind each row of ``zw``
        self.y = y
        if (
            parent is not None
            and rows is not None
            and self.u is None
            and parent.u is None
            and parent.zw.dtype == work
            and np.array_equal(parent.target, self.target)
        ):
            self._from_parent(parent, idx)
            return
        # gathered, projected and cast chunk by chunk: 4,096 rows (10 MB) at a time, which stay in
        # cache; 65,536-row float64 temporaries (157 MB each, fresh pages) cost 8× more here
        self.zw = np.empty((idx.size, r), dtype=work)
        for start in range(0, idx.size, 4096):
            block = z[idx[start : start + 4096]]
            self.zw[start : start + 4096] = block if self.u is None else block @ self.u
        # Penalty metric: the curvature-weighted second moment at the prior (the Fisher weights
        # of the pair model there), so that (β/2)·tr(WΔWΔ) approximates β × the KL divergence
        # from the prior's response model, and equals the solver's first preconditioner.
        c = float(self.target[0, 0])
        if sq is not None and self.u is None and np.array_equal(self.target, c * np.eye(d)):
            self.d_prior = c * sq[idx]
        else:
            self.d_prior = quad_forms(self.zw, self.target)
        # (curvature capped at its pair-weighted 99th percentile, then weighted)
        self.h = curvature(self.d_prior, self.blocks.y)
        self.h_cap = _weighted_quantile(self.h, self.w, 0.99)
        self._gram_h = weighted_gram(self.zw, np.minimum(self.h, self.h_cap) * self.w)
        self.weight = symmetrize(self._gram_h / self.zw.shape[0])

    def _from_parent(self, parent: _Problem, idx: np.ndarray) -> None:
        """Rows, prior distances and penalty metric of a subset of ``parent``'s pairs.

        ``n_t·W_t = Σ_train min(h, q_t)·w_t·zzᵀ`` is the parent's ``Σ_all min(h, q)·w·zzᵀ``
        minus its held-out rows, plus the few rows whose cap differs (h above min(q, q_t)),
        times the weights' rescaling ``w_t = c·w``.
        """
        where = np.empty(parent.rows.size, dtype=np.int64)
        where[parent.rows] = np.arange(parent.rows.size)
        pos = where[idx]  # rows of parent.zw, in this problem's order
        self.zw = parent.zw[pos]
        self.d_prior = parent.d_prior[pos]
        self.h = parent.h[pos]
        self.h_cap = _weighted_quantile(self.h, self.w, 0.99)
        out = np.ones(parent.rows.size, dtype=bool)
        out[pos] = False
        held = np.flatnonzero(out)
        pw = parent.w
        gram = parent._gram_h - weighted_gram(
            parent.zw[held], np.minimum(parent.h[held], parent.h_cap) * pw[held]
        )
        wp = pw[pos]
        differ = np.flatnonzero(self.h > min(parent.h_cap, self.h_cap))
        if differ.size:
            change = np.minimum(self.h[differ], self.h_cap) - np.minimum(
                self.h[differ], parent.h_cap
            )
            gram += weighted_gram(self.zw[differ], change * wp[differ])
        self._gram_h = gram * (float(np.sum(self.w)) / float(np.sum(wp)))  # w_t = c·w
        self.weight = symmetrize(self._gram_h / self.zw.shape[0])

    def to_span(self, sigma: np.ndarray) -> np.ndarray:
        return sigma if self.u is None else self.u.T @ sigma @ self.u

    def full(self, s: np.ndarray) -> np.ndarray:
        """``U S Uᵀ + (I - UUᵀ) Π (I - UUᵀ)``: the fit on the span, the prior outside it."""
        if self.u is None:
            return s
        out = self.u @ s @ self.u.T
        rest = np.eye(self.d) - self.u @ self.u.T
        return symmetrize(out + rest @ self.prior @ rest)

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


class EXPLORE:
    """Fair metric from labelled pairs by penalised maximum likelihood (the paper's EXPLORE).

    Parameters
    ----------
    max_eigenvalue : float, "auto" or None
        Optional hard bound ``c`` on the spectrum of the fitted part (default None: no bound; the
        penalty keeps the answer finite). "auto" is the former rule ``100·d / mean‖z‖²``.
    sensitive_directions : array (k, d), optional
        After fitting, ``Σ ← (I - P) Σ (I - P)`` with ``P`` the projector onto their row span.
    tol, max_iter : solver stopping tolerance (mean log-likelihood) and iteration limit.
    precision : {"mixed", "double"}
        Floating point type of the n×d products during iterations.
    init : {"identity", "random"}
        Start of the unpenalised fit (``alpha=0``): best scaled identity/inverse moment, or a
        random PSD matrix drawn with ``random_state``.
    random_state : int, numpy Generator or None
    prior : array (d, d) PSD, optional
        The metric assumed where the data say nothing, and the target of the shrinkage (e.g. the
        study's FACE metric). Default: the identity.
    prior_scale : "auto" or float
        "auto": the prior is multiplied by the scalar ``c`` maximising the likelihood of
        ``c·prior`` on the data; a float uses that multiplier.
    alpha : "auto" or float
        Strength ``β`` of the shrinkage penalty ``(β/2)·tr(WΔWΔ)``, ``Δ = Σ - prior``, ``W`` the
        curvature-weighted second moment at the prior. "auto": chosen by held-out likelihood
        (a path over folds, or rays through fold fits on one split; module docstring); a float
        fixes it (0: the plain MLE).
    validate : bool
        With a fixed ``alpha``, also fit it on the validation folds to report
        ``heldout_loglik_`` (else NaN). Always done with ``alpha="auto"``.

    Attributes
    ----------
    sigma_, loglik_ (mean log-likelihood of ``sigma_`` on all pairs), n_iter_, converged_,
    projected_gradient_norm_, max_eigenvalue_, n_features_in_; and ``alpha_``, ``alpha_path_``
    (tuple of (alpha, held-out loglik) tried), ``heldout_loglik_``, ``heldout_loglik_ci_``
    (95 % interval), ``heldout_n_``, ``heldout_distances_`` (per pair: distance under the fit
    that did not see it, NaN if never held out), ``n_constrained_`` (dimension of the span of the
    differences), ``prior_`` (resolved prior), ``prior_scale_``, ``bound_active_``,
    ``warnings_`` (readable strings).
    """

    def __init__(
        self,
        max_eigenvalue: float | Literal["auto"] | None = None,
        *,
        sensitive_directions: ArrayLike | None = None,
        tol: float = 1e-4,
        max_iter: int = 500,
        precision: Literal["mixed", "double"] = "mixed",
        init: Literal["identity", "random"] = "identity",
        random_state: int | np.random.Generator | None = None,
        prior: ArrayLike | None = None,
        prior_scale: float | Literal["auto"] = "auto",
        alpha: float | Literal["auto"] = "auto",
        validate: bool = False,
    ) -> None:
        self.max_eigenvalue = max_eigenvalue
        self.sensitive_directions = sensitive_directions
        self.tol = tol
        self.max_iter = max_iter
        self.precision = precision
        self.init = init
        self.random_state = random_state
        self.prior = prior
        self.prior_scale = prior_scale
        self.alpha = alpha
        self.validate = validate

    # -- fitting -------------------------------------------------------------------------------
    def fit(
        self,
        X1: ArrayLike,
        X2: ArrayLike,
        y: ArrayLike,
        *,
        sample_weight: ArrayLike | None = None,
        validation: ArrayLike | None = None,
    ) -> EXPLORE:
        """Fit on pairs ``(X1[i], X2[i])`` with labels ``y[i]`` (1 comparable, 0 incomparable).

        ``sample_weight``: optional weight ≥ 0 per pair; the objective is the weighted mean
        log-likelihood (weights scaled to mean 1), and the held-out figures are weighted too.

        ``validation``: optional pairs to hold out for choosing the penalty and for the held-out
        figures: a boolean mask (one split) or an integer fold per pair (``-1``: never held out),
        e.g. to keep repeated answers to one pair in one fold. Default: EXPLORE's own stratified
        folds (module docstring).
        """
        return self.fit_differences(
            differences(X1, X2), y, sample_weight=sample_weight, validation=validation
        )

    def fit_differences(
        self,
        Z: ArrayLike,
        y: ArrayLike,
        *,
        sample_weight: ArrayLike | None = None,
        validation: ArrayLike | None = None,
    ) -> EXPLORE:
        """Fit on difference vectors ``Z[i] = φ(x_i1) - φ(x_i2)`` (keywords: see ``fit``)."""
        z = check_float_matrix(Z, "Z")
        lab = check_labels(y, z.shape[0])
        check_explore_params(self)
        wts = check_weights(sample_weight, z.shape[0])
        self._weights = wts
        held = (
            None
            if validation is None
            else check_validation(validation, lab, wts, explore_shortfall)
        )
        n, d = z.shape
        sq = np.einsum("ij,ij->i", z, z)
        if not np.any(sq > 0):
            raise ValueError("all difference vectors are zero; Sigma is not identifiable")
        short = explore_shortfall(lab[wts > 0])
        if not short.ok:
            raise ValueError(
                short.message + " (among pairs of weight > 0)" * (sample_weight is not None)
            )
        notes: list[str] = []
        cap = self._resolve_cap(sq, d)
        second = _second_moment(z)
        prior, scale = self._resolve_prior(z, lab, d, notes, sq)
        full = _Problem(z, lab, prior, second, self.precision, weights=wts, sq=sq)
        tol, max_iter = float(self.tol), int(self.max_iter)
        path: list[tuple[float, float]] = []
        heldout = (np.nan, (np.nan, np.nan), 0)
        self._heldout_distances = np.full(n, np.nan)
        self._warm_distances = None
        if self.alpha == "auto":
            beta, start, path, heldout = self._choose_alpha(
                z, lab, second, prior, full, cap, validation=held
            )
        elif self.validate or held is not None:
            beta = float(self.alpha)
            _, start, path, heldout = self._choose_alpha(
                z, lab, second, prior, full, cap, fixed=beta, validation=held
            )
        else:
            beta = float(self.alpha)
            start = None
        d0 = None
        if start is not None and beta > 0.0:
            # warm start or the prior, whichever the penalised objective prefers (the fold's
            # optimum is noisy in many directions; near the prior the problem is well conditioned)
            known = getattr(self, "_warm_distances", None)
            warm = start if known is None else (start, known)
            start, d0 = _better_start(full, beta, [warm, _clip(full.target, cap)])
        if start is None:
            start = (
                self._initial_sigma(full.zw, full.blocks, full.r, cap)
                if beta == 0.0
                else _clip(full.target, cap)
            )
        validated = self.alpha == "auto" or self.validate or held is not None
        t0 = getattr(self, "_path_step", None) if validated else None
        res = full.solve(beta, start, cap, tol, max_iter, t0=t0, d0=d0)
        w, v = np.linalg.eigh(symmetrize(res.sigma))
        s_span = symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)
        sigma = full.full(s_span)
        if self.sensitive_directions is not None:
            keep = np.eye(d) - projector(self.sensitive_directions, d)
            sigma = symmetrize(keep @ sigma @ keep)
        self.sigma_ = sigma
        self.loglik_ = _wmean(pair_loglik(_psd_quad_forms(z, sigma), lab), wts)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.projected_gradient_norm_ = res.projected_gradient_norm
        self.max_eigenvalue_ = cap
        self.n_features_in_ = d
        self.n_constrained_ = full.r
        self.prior_ = prior
        self.prior_scale_ = scale
        self.alpha_ = beta
        self.alpha_path_ = tuple(path)
        self.heldout_loglik_ = heldout[0]
        self.heldout_loglik_ci_ = heldout[1]
        self.heldout_n_ = heldout[2]
        self.heldout_distances_ = self._heldout_distances
        self._diagnose(full, s_span, w, cap, beta, path, n, notes)
        self.warnings_ = notes
        return self

    def _diagnose(self, full, s_span, w, cap, beta, path, n, notes) -> None:
        """Set ``bound_active_`` and collect readable warnings (module docstring, "safeguards")."""
        bound = False
        if full.r < full.d:
            notes.append(
                f"the pair differences span {full.r} of {full.d} dimensions; in the other "
                f"{full.d - full.r} directions Sigma is the prior (no data there)"
            )
        if np.isfinite(cap) and w.size and w[-1] >= cap * (1.0 - 1e-6):
            bound = True
            notes.append(f"the eigenvalue bound {cap:.4g} is active: the fit is capped")
        top = _white_top(full, s_span)
        if self.alpha == "auto":
            separated = getattr(self, "_path_top", 0.0) > FLOOR_GROWTH
        else:
            separated = top > SEPARATION_LEVEL
        if separated:
            bound = True
            notes.append(
                "the data (nearly) separate comparable from incomparable pairs: Sigma keeps "
                f"growing as the penalty weakens (typical pair distance along the top direction "
                f"{top:.3g}); it is finite only because of the penalty (alpha = {beta:.3g})"
                + (" or the bound" if np.isfinite(cap) else "")
            )
        if not self.converged_:
            notes.append(f"the solver stopped after {self.n_iter_} iterations without converging")
        self.bound_active_ = bound

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
        wts = np.ones(blocks.n) if blocks.w is None else blocks.w
        sub_z, sub_y, sub_w = z[::stride].astype(np.float64), blocks.y[::stride], wts[::stride]
        if not (np.any(sub_y > 0) and np.any(sub_y < 1)) or not np.any(sub_w > 0):
            sub_z, sub_y, sub_w = z.astype(np.float64), blocks.y, wts
        second = sub_z.T @ sub_z / sub_z.shape[0]
        w, v = np.linalg.eigh(second)
        floor = 1e-6 * max(float(w[-1]), np.finfo(float).tiny)
        inv = (v / np.maximum(w, floor)) @ v.T
        best_ll, best = -np.inf, np.eye(d)
        for shape in (np.eye(d), (inv + inv.T) / 2.0):
            q = quad_forms(sub_z, shape)
            top = float(np.linalg.eigvalsh(shape)[-1])
            hi = min(cap / top, 1e6 / max(float(np.mean(q)), np.finfo(float).tiny))
            c, ll = _best_scale(q, sub_y, hi, sub_w)
            if ll > best_ll:
                best_ll, best = ll, c * shape
        if self.init == "identity":
            return best
        rng = np.random.default_rng(self.random_state)
        g = rng.standard_normal((d, d))
        s = float(np.trace(best)) / d * (0.5 * np.eye(d) + g @ g.T / d)
        w, v = np.linalg.eigh(s)
        return symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)

    def _resolve_prior(
        self, z: np.ndarray, lab: np.ndarray, d: int, notes: list[str], sq: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """``sq``: the squared norms ``‖z_i‖²`` (the identity prior's distances)."""
        shape = np.eye(d) if self.prior is None else validate_sigma(self.prior, name="prior")
        if shape.shape != (d, d):
            raise ValueError(f"prior must be a ({d}, {d}) matrix, got {shape.shape}")
        if self.prior_scale != "auto":
            return shape * float(self.prior_scale), float(self.prior_scale)
        stride = max(1, z.shape[0] // 20000)
        wts = self._weights
        sub_z, sub_y, sub_w = z[::stride], lab[::stride], wts[::stride]
        if not (np.any(sub_y > 0) and np.any(sub_y < 1)) or not np.any(sub_w > 0):
            sub_z, sub_y, sub_w = z, lab, wts
        if self.prior is None:  # the identity's distances are the squared norms
            q = sq if sub_z.shape[0] == z.shape[0] else sq[::stride]
        else:
            q = quad_forms(sub_z, shape)
        if not np.any(q > 0):
            notes.append("the prior gives every pair distance 0; its scale is left at 1")
            return shape, 1.0
        c, _ = _best_scale(q, sub_y, 1e6 / max(float(np.mean(q)), np.finfo(float).tiny), sub_w)
        return shape * c, c

    def _choose_alpha(self, z, lab, second, prior, full, cap, fixed=None, validation=None):
        """Penalty path on validation folds (module docstring, "regularisation"); with ``fixed``
        only that penalty is fitted on the folds (for its held-out figure). ``validation``: a
        boolean mask of the pairs to hold out (one split) instead of the default folds."""
        n = lab.size
        wts = self._weights
        tol, max_iter = max(float(self.tol), PATH_TOL), min(int(self.max_iter), PATH_MAX_ITER)
        folds = _folds(lab, kfold_validation(n, z.shape[1])) if validation is None else validation
        probs = []
        for tr, va in folds:
            zv = z[va]
            c_tr = (n * second - zv.T @ zv) / tr.size
            prob = _Problem(
                z, lab, prior, symmetrize(c_tr), self.precision, rows=tr, weights=wts, parent=full
            )
            probs.append(
                {"p": prob, "zv": zv, "yv": lab[va], "wv": wts[va], "s": _clip(prob.target, cap)}
            )
        val_index = np.concatenate([va for _, va in folds])
        r = max(pr["p"].r for pr in probs)
        n_tr = min(pr["p"].zw.shape[0] for pr in probs)
        floor = 1.0 / n
        b0 = float(np.clip(_start_strength(probs[0]["p"]), floor, PATH_MAX))
        scores: dict[float, tuple] = {}

        steps: dict[float, float] = {}
        last_step: list[float | None] = [None] * len(probs)

        def run(beta: float, starts: list) -> tuple[float, list]:
            sols, vals, dists = [], [], []
            for i, (pr, st) in enumerate(zip(probs, starts, strict=True)):
                cands = [st] if isinstance(st, np.ndarray) else list(st)
                st, d0 = (
                    (cands[0], None) if len(cands) == 1 else _better_start(pr["p"], beta, cands)
                )
                res = pr["p"].solve(beta, st, cap, tol, max_iter, t0=last_step[i], d0=d0)
                last_step[i] = res.step  # the next path fit starts from this step size
                if i == 0:
                    steps[beta] = res.step
                sols.append(res.sigma)
                sig = pr["p"].full(symmetrize(res.sigma))
                dists.append(np.maximum(quad_forms(pr["zv"], sig), 0.0))
                vals.append(pair_loglik(dists[-1], pr["yv"]))
            per_pair = np.concatenate(vals)
            val_w = np.concatenate([pr["wv"] for pr in probs])
            mean = _wmean(per_pair, val_w)
            scores[beta] = (mean, per_pair, sols, np.concatenate(dists), val_w)
            return scores[beta][0], sols

        def initial() -> list:
            return [
                _clip(self._initial_sigma(pr["p"].zw, pr["p"].blocks, pr["p"].r, cap), cap)
                for pr in probs
            ]

        ray = None
        if fixed is not None:
            b0 = fixed
            starts = [pr["s"] for pr in probs] if fixed > 0.0 else initial()
            best_v, sols0 = run(b0, starts)
            best_b = b0
            directions = ()
        elif n_tr >= LARGE_N_RATIO * r * (r + 1) / 2.0:
            # n ≫ d²: the penalty can only matter at the noise level; skip the path and fit at
            # the floor (≈ the MLE, still finite on separable data), one validation fit.
            b0 = floor
            best_v, sols0 = run(b0, initial())
            best_b = b0
            directions = ()
            if _white_top(probs[0]["p"], sols0[0]) > 3.0:
                # a large typical distance: check whether the floor is what holds it (separation)
                v, _ = run(10.0 * floor, sols0)
                if v > best_v:
                    best_v, best_b = v, 10.0 * floor
        else:
            if len(probs) == 1:  # the ray's fold fit only places the ray (module docstring)
                max_iter = min(max_iter, RAY_MAX_ITER)
            init = initial()
            best_v, sols0 = run(b0, [(pr["s"], i) for pr, i in zip(probs, init, strict=True)])
            best_b = b0
            directions = (0.1, 10.0)
            if len(probs) == 1:  # one split (large n): fits and rays (``_ray_choice``)
                pr, beta, sol, ray_path = probs[0], b0, sols0[0], {}
                for _ in range(RAY_ROUNDS):
                    ray = _ray_choice(
                        pr["p"], pr["zv"], pr["yv"], pr["wv"], beta, symmetrize(sol), floor
                    )
                    ray_path[beta] = ray["at_fit"]
                    ratio = ray["beta"] / beta
                    if 1.0 / RAY_RATIO <= ratio <= RAY_RATIO:
                        break
                    # far from the fitted penalty: fit there (from the ray's point or the
                    # prior, whichever is better) and read the ray from that fit
                    beta = ray["beta"]
                    _, (sol,) = run(beta, [(_clip(ray["sigma"], cap), pr["s"])])
                ray_path[ray["beta"]] = _wmean(ray["per_pair"], pr["wv"])
                directions = ()
        for direction in directions:
            beta, sols, moved = b0, sols0, False
            while True:
                nxt = beta * direction
                if nxt < floor * (1 - 1e-9) or nxt > PATH_MAX:
                    if direction < 1 and beta > floor * (1 + 1e-9):
                        nxt = floor  # finish the descent exactly at the floor
                    else:
                        break
                # warm start, or the prior when the penalty grows (whichever is better)
                starts = (
                    sols
                    if direction < 1
                    else [(a, pr["s"]) for a, pr in zip(sols, probs, strict=True)]
                )
                v, sols = run(nxt, starts)
                if v <= best_v + PATH_MIN_GAIN:
                    if v > best_v:
                        best_v, best_b = v, nxt
                    break
                best_v, best_b, beta, moved = v, nxt, nxt, True
            if moved:
                break
        if ray is not None:
            best_b = ray["beta"]
            per_pair, distances, span_fit = ray["per_pair"], ray["distances"], ray["sigma"]
            val_w = probs[0]["wv"]
            path = sorted(ray_path.items())
            top = _white_top(probs[0]["p"], span_fit)
            # held-out likelihood still rising at the end of the ray, beyond the PSD limit:
            # the data (nearly) separate the labels
            self._path_top = float(ray["s"] >= RAY_S_MAX * (1 - 1e-6) and top > SEPARATION_LEVEL)
        else:
            path = sorted((b, v[0]) for b, v in scores.items())
            per_pair, distances, val_w = scores[best_b][1], scores[best_b][3], scores[best_b][4]
            span_fit = symmetrize(scores[best_b][2][0])
            self._path_top = _growth(scores, probs, best_b, floor)
        mean, interval = _wmean_ci(per_pair, val_w)
        heldout = (mean, interval, per_pair.size)
        self._heldout_distances = np.full(n, np.nan)
        self._heldout_distances[val_index] = distances
        warm = full.to_span(probs[0]["p"].full(span_fit))
        self._warm_distances = None
        if ray is not None and not np.isfinite(cap):
            # the ray point's distances are known on every pair (training part and validation
            # pairs): the final fit's warm start needs no n×d² product
            known = np.empty(n)
            known[probs[0]["p"].rows] = ray["d_train"]
            known[folds[0][1]] = ray["distances"]
            self._warm_distances = known[full.rows]
        self._path_step = steps.get(b0 if ray is not None else best_b)
        return best_b, _clip(warm, cap), path, heldout

    # -- using the fitted metric ---------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "sigma_"):
            raise ValueError("this EXPLORE instance is not fitted yet; call fit first")

    def distance(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        """Squared metric distances ``d_i = (x1_i - x2_i)ᵀ Σ (x1_i - x2_i)``."""
        self._check_fitted()
        z = differences(X1, X2)
        if z.shape[1] != self.n_features_in_:
            raise ValueError(f"expected {self.n_features_in_} features, got {z.shape[1]}")
        return np.maximum(quad_forms(z, self.sigma_), 0.0)

    def predict_proba(self, X1: ArrayLike, X2: ArrayLike) -> np.ndarray:
        """``P(comparable) = 2σ(-d)`` per pair."""
        return p_comparable(self.distance(X1, X2))

    def score_samples(self, X1: ArrayLike, X2: ArrayLike, y: ArrayLike) -> np.ndarray:
        """Log-likelihood of each labelled pair under the fitted Σ."""
        d = self.distance(X1, X2)
        lab = np.asarray(y, dtype=np.float64)
        if lab.shape != d.shape or np.any((lab < 0) | (lab > 1)) or not np.all(np.isfinite(lab)):
            raise ValueError(f"y must be a 1-D array of {d.size} labels in [0, 1]")
        return pair_loglik(d, lab)

    def score(self, X1: ArrayLike, X2: ArrayLike, y: ArrayLike) -> float:
        """Mean log-likelihood of labelled pairs under the fitted Σ."""
        return float(np.mean(self.score_samples(X1, X2, y)))
