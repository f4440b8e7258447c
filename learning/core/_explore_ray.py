"""The one-split penalty search of EXPLORE (large data): read the penalty off the *ray* from
the prior through one training-part fit.

A fit ``S₀`` at ``β₀`` defines the ray ``Π + s·(S₀ - Π)``. Distances are linear in ``s``, so
the validation log-likelihood along it is concave in one variable; its maximiser ``s_v``
(``ray_best``, bisection) and the ray's first-order condition on the training part give the
penalty ``β̂`` (``ray_choice``). The search around it (refits when ``β̂`` lands far from the
fitted penalty) is ``_explore_path``'s; the rules are in ``explore.py``'s module docstring
("regularisation", one split).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._explore_problem import Problem
from ._pairloss import pair_loglik, pair_slope, quad_forms, weighted_mean
from .psd import symmetrize

RAY_S_MAX = 100.0  # furthest point tried on the ray, in multiples of the first fit's departure


@dataclass(frozen=True, eq=False)
class RayReading:
    """What one ray says: the penalty ``beta`` (``β̂``), the point ``s`` (``s_v``) and ``limit``
    (the furthest PSD point) on the ray, the ray's point ``sigma`` on the span, the validation
    pairs' ``distances`` and log-likelihoods (``per_pair``) there, the training pairs' distances
    ``d_train`` (in the problem's row order), ``at_fit``: the validation pairs' weighted
    mean log-likelihood at the fit itself (``s = 1``), and ``blocked``: the validation
    likelihood still rises where the ray leaves the PSD cone (``s = limit < RAY_S_MAX``), so
    the first-order condition was read at a constraint, not at the validation optimum, and
    ``beta`` says nothing (the search walks the path instead)."""

    beta: float
    s: float
    limit: float
    sigma: np.ndarray
    distances: np.ndarray
    per_pair: np.ndarray
    d_train: np.ndarray
    at_fit: float
    blocked: bool = False


def ray_best(dp: np.ndarray, dd: np.ndarray, y: np.ndarray, w: np.ndarray, hi: float) -> float:
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


def ray_limit(sol: np.ndarray, delta: np.ndarray) -> float:
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


def ray_choice(
    prob: Problem,
    zv: np.ndarray,
    yv: np.ndarray,
    wv: np.ndarray,
    beta0: float,
    sol: np.ndarray,
    floor: float,
    ceiling: float,
) -> RayReading:
    """Strength from one fold fit (``explore.py``'s docstring, "regularisation", one split).

    The fit ``S₀`` at ``β₀`` defines the ray ``S(s) = Π + s·(S₀ - Π)`` (s = 0 the prior, s = 1
    the fit). Distances are linear in ``s``, so the validation pairs' log-likelihood along it
    is a concave function of one variable: ``s_v`` maximises it. The penalty that puts the
    training optimum on the ray at ``s_v`` solves the ray's first-order condition
    ``ℓ_T'(s_v) = β·s_v·tr(WΔ₀WΔ₀)``, ``Δ₀ = S₀ - Π``: that is ``β̂``, kept in
    ``[floor, ceiling]``.
    """
    delta = symmetrize(sol - prob.target)
    q0 = float(np.sum((prob.weight @ delta @ prob.weight) * delta))
    hi = ray_limit(sol, delta)
    full_delta = delta if prob.u is None else prob.u @ delta @ prob.u.T
    dp_v = quad_forms(zv, prob.full(prob.target))
    dd_v = quad_forms(zv, full_delta)
    s_v = ray_best(dp_v, dd_v, yv, wv, hi)
    dp_t = prob.d_prior
    dd_t = quad_forms(prob.zw, delta)
    slope = float(
        np.dot(pair_slope(np.maximum(dp_t + s_v * dd_t, 0.0), prob.blocks.y) * dd_t, prob.w)
    )
    slope /= dd_t.size
    if q0 <= 0.0:
        beta = beta0
    elif s_v <= 1e-12:
        beta = ceiling
    elif slope <= 0.0:
        beta = floor
    else:
        beta = float(np.clip(slope / (s_v * q0), floor, ceiling))
    d_v = np.maximum(dp_v + s_v * dd_v, 0.0)
    return RayReading(
        beta=beta,
        s=s_v,
        limit=hi,
        sigma=symmetrize(prob.target + s_v * delta),
        distances=d_v,
        per_pair=pair_loglik(d_v, yv),
        d_train=np.maximum(dp_t + s_v * dd_t, 0.0),
        at_fit=weighted_mean(pair_loglik(np.maximum(dp_v + dd_v, 0.0), yv), wv),
        blocked=bool(hi < RAY_S_MAX * (1 - 1e-6) and s_v >= hi * (1 - 1e-9)),
    )
