"""Where EXPLORE's fits start: the prior's scale, the unpenalised fit's start, and the better
of several starts for a penalised fit.

``best_scale`` is the 1-D likelihood search behind both ``prior_scale="auto"`` (``resolve_prior``:
the scalar ``c`` maximising the likelihood of ``c·prior``) and the unpenalised start
(``initial_sigma``: the best of ``c·I`` and ``c·C⁻¹``); ``better_start`` picks, for a penalty
``β``, the start with the smaller penalised objective (a warm start, the prior, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._explore_problem import Problem, clip_spectrum
from ._pairloss import PairBlocks, pair_loglik, quad_forms, weighted_gram, weighted_mean
from .psd import symmetrize, validate_sigma

PATH_START = 10.0  # first penalty on the path: PATH_START × a James–Stein-type estimate


@dataclass(frozen=True, eq=False)
class ExploreWarm:
    """Where a refit of almost the same data may start: the previous fit's ``sigma`` (d × d,
    before any sensitive projection) and each validation fold's fit (``folds``, d × d, in the
    folds' order; None when unknown). A start is only a candidate: each fit begins from the
    candidate with the best penalised objective, and stops on the same optimality test."""

    sigma: np.ndarray
    folds: tuple[np.ndarray, ...] | None = None


def warm_in(prob: Problem, sigma: np.ndarray | None, cap: float) -> np.ndarray | None:
    """A full d × d warm start as a start on ``prob``'s span (clipped to the bound); None when
    there is none or its shape does not fit (another space)."""
    if sigma is None or np.shape(sigma) != (prob.d, prob.d) or not np.all(np.isfinite(sigma)):
        return None
    return clip_spectrum(prob.to_span(np.asarray(sigma, dtype=np.float64)), cap)


def best_scale(q: np.ndarray, y: np.ndarray, hi: float, w: np.ndarray) -> tuple[float, float]:
    """``argmax_{0 < c ≤ hi} mean w·ℓ(c·q, y)`` (concave in c): log grid, then golden section."""

    def loglik(c: float) -> float:
        return weighted_mean(pair_loglik(c * q, y), w)

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


def initial_sigma(
    z: np.ndarray,
    blocks: PairBlocks,
    d: int,
    cap: float,
    init: str,
    random_state: int | np.random.Generator | None,
) -> np.ndarray:
    """Best of ``c·I`` and ``c·C⁻¹`` (``C`` the second moment of the differences), with
    ``c`` maximising the likelihood (1-D concave search on a deterministic pair subsample);
    ``init="random"``: a random PSD matrix of that trace drawn with ``random_state``.
    """
    stride = max(1, blocks.n // 10000)
    wts = np.ones(blocks.n) if blocks.w is None else blocks.w
    sub_z, sub_y, sub_w = z[::stride].astype(np.float64), blocks.y[::stride], wts[::stride]
    if not (np.any(sub_y > 0) and np.any(sub_y < 1)) or not np.any(sub_w > 0):
        sub_z, sub_y, sub_w = np.asarray(z[0 : z.shape[0]], dtype=np.float64), blocks.y, wts
    second = sub_z.T @ sub_z / sub_z.shape[0]
    w, v = np.linalg.eigh(second)
    floor = 1e-6 * max(float(w[-1]), np.finfo(float).tiny)
    inv = (v / np.maximum(w, floor)) @ v.T
    best_ll, best = -np.inf, np.eye(d)
    for shape in (np.eye(d), (inv + inv.T) / 2.0):
        q = quad_forms(sub_z, shape)
        top = float(np.linalg.eigvalsh(shape)[-1])
        hi = min(cap / top, 1e6 / max(float(np.mean(q)), np.finfo(float).tiny))
        c, ll = best_scale(q, sub_y, hi, sub_w)
        if ll > best_ll:
            best_ll, best = ll, c * shape
    if init == "identity":
        return best
    rng = np.random.default_rng(random_state)
    g = rng.standard_normal((d, d))
    s = float(np.trace(best)) / d * (0.5 * np.eye(d) + g @ g.T / d)
    w, v = np.linalg.eigh(s)
    return symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)


def resolve_prior(
    prior: ArrayLike | None,
    prior_scale: float | str,
    z: np.ndarray,
    lab: np.ndarray,
    wts: np.ndarray,
    d: int,
    notes: list[str],
    sq: np.ndarray,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """The prior ``Π = c·prior`` (identity when ``prior`` is None) and ``c``: ``prior_scale``, or
    with "auto" the likelihood's best scalar. ``sq``: the squared norms ``‖z_i‖²`` (the identity
    prior's distances); ``notes`` receives a readable warning when the scale cannot be chosen;
    ``rows``: choose ``c`` on these pairs only (a validation fold's training part, ``fold_priors``).
    """
    shape = np.eye(d) if prior is None else validate_sigma(prior, name="prior")
    if shape.shape != (d, d):
        raise ValueError(f"prior must be a ({d}, {d}) matrix, got {shape.shape}")
    if prior_scale != "auto":
        return shape * float(prior_scale), float(prior_scale)
    n = z.shape[0] if rows is None else rows.size
    stride = max(1, n // 20000)
    sub = slice(None, None, stride) if rows is None else rows[::stride]
    sub_y, sub_w = lab[sub], wts[sub]
    if not (np.any(sub_y > 0) and np.any(sub_y < 1)) or not np.any(sub_w > 0):
        sub = slice(None) if rows is None else rows
        sub_y, sub_w = lab[sub], wts[sub]
    # the identity's distances are the squared norms
    q = sq[sub] if prior is None else quad_forms(z[sub], shape)
    if not np.any(q > 0):
        notes.append("the prior gives every pair distance 0; its scale is left at 1")
        return shape, 1.0
    c, _ = best_scale(q, sub_y, 1e6 / max(float(np.mean(q)), np.finfo(float).tiny), sub_w)
    return shape * c, c


def better_start(prob: Problem, beta: float, starts: list) -> tuple[np.ndarray, np.ndarray]:
    """The start with the smaller penalised objective ``-ℓ + (β/2) tr(CΔCΔ)`` on ``prob``, and
    its distances (the prior's are known: ``prob.d_prior``; a start given as ``(S, d)`` brings
    its own, in ``prob``'s row order)."""
    scale = float(np.max(np.abs(prob.target))) if prob.target.size else 0.0

    def distances(s: np.ndarray) -> np.ndarray:
        if np.max(np.abs(s - prob.target)) <= 1e-12 * max(scale, np.finfo(float).tiny):
            return prob.d_prior
        return prob.distances(s)

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


def with_warm(starts: list, problems: list, warm: tuple | None, cap: float) -> list:
    """Each fold's start candidates (an array or a tuple of them) with its warm start added:
    ``warm``, a previous refit's fold fits (d × d; ignored when their number differs)."""
    if warm is None or len(warm) != len(starts):
        return starts
    out = []
    for s, p, w in zip(starts, problems, warm, strict=True):
        w = warm_in(p, w, cap)
        out.append(s if w is None else (*((s,) if isinstance(s, np.ndarray) else s), w))
    return out


def final_start(
    full: Problem,
    beta: float,
    cap: float,
    warm: np.ndarray | None,
    warm_distances: np.ndarray | None,
    init: str,
    random_state: int | np.random.Generator | None,
    previous: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The final fit's start on all pairs (``full``) and, when known, its distances: the
    validation fit ``warm`` (distances ``warm_distances`` when known) or the prior, whichever the
    penalised objective prefers (the fold's optimum is noisy in many directions; near the prior
    the problem is well conditioned); without ``warm``, the prior, or for ``β = 0`` the
    unpenalised start (``initial_sigma``). ``previous`` (a refit's warm start on the span) is
    one more candidate."""
    if previous is not None:
        cands = [] if warm is None else [warm if warm_distances is None else (warm, warm_distances)]
        cands += [previous] + ([clip_spectrum(full.target, cap)] if beta > 0.0 else [])
        return better_start(full, beta, cands)
    if warm is not None and beta > 0.0:
        start = warm if warm_distances is None else (warm, warm_distances)
        return better_start(full, beta, [start, clip_spectrum(full.target, cap)])
    if warm is not None:
        return warm, None
    if beta == 0.0:
        return initial_sigma(full.zw, full.blocks, full.r, cap, init, random_state), None
    return clip_spectrum(full.target, cap), None


def start_strength(prob: Problem) -> float:
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


def fold_priors(
    priors: list | None,
    validation: list | None,
    folds: list[tuple[np.ndarray, np.ndarray]],
    model,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> list[np.ndarray]:
    """Each validation fold's prior, learned without the pairs the fold holds out: the fold's own
    (``priors``, one per fold of the caller's ``validation``: the app's FACE refitted on the
    fold's training part) or ``model.prior``, its scale (``model.prior_scale="auto"``) chosen on
    the fold's training pairs alone (``resolve_prior(rows=...)``); ``data``: ``(Z, y, weights,
    ‖z‖²)``.

    A prior learned from the pairs themselves must not have seen the pairs a fold scores: FACE on
    all comparable pairs made the held-out figures promise +0.15 per pair over the constant where
    the next answers found +0.00 (issue 25). Nor its scale: the scale sets the prior's overall
    comparable rate, and one chosen on all pairs had seen the held-out labels that the constant
    (the training part's rate) had not — on coin-flip answers the held-out gain of the fit over
    the constant was then centred at +0.02 per answer above its honest value at 60 answers
    (``benchmarks/informative_null.py``, docs/core.md)."""
    if priors is not None and (validation is None or len(priors) != len(folds)):
        raise ValueError("validation_priors needs validation, with one prior per fold")
    z, lab, wts, sq = data
    d = z.shape[1]
    out = []
    for k, (train, _) in enumerate(folds):
        shape = model.prior
        if priors is not None:
            shape = validate_sigma(priors[k], name="validation prior")
            if shape.shape != (d, d):
                raise ValueError(
                    f"a validation prior must be a ({d}, {d}) matrix, got {shape.shape}"
                )
        out.append(resolve_prior(shape, model.prior_scale, z, lab, wts, d, [], sq, rows=train)[0])
    return out
