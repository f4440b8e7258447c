"""How EXPLORE chooses its penalty ``β`` and measures held-out fit: the validation folds, the
path of penalties over them, the large-n floor, and the one-split search along a ray.

``choose_alpha`` is the entry point (``EXPLORE.fit_differences`` calls it with the folds) and
returns an ``AlphaChoice``. Its steps are module functions sharing one ``_Search`` (the folds'
problems, the solver settings, and every fitted penalty's score): ``_fit_folds`` fits all folds
at one penalty, ``_walk`` the k-fold path, ``_at_floor`` the large-n case, ``_ray_search`` the
one split (reading the rays: ``_explore_ray``). The rules and their measurements are in
``explore.py``'s module docstring ("regularisation", "held-out likelihood") and docs/core.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._explore_problem import SEPARATION_LEVEL, Problem, clip_spectrum
from ._explore_ray import RAY_S_MAX, RayReading, ray_choice
from ._explore_start import better_start, initial_sigma
from ._pairloss import pair_loglik, quad_forms, weighted_gram, weighted_mean, weighted_mean_ci
from .psd import symmetrize

N_FOLDS = 5
VALIDATION_FRACTION = 0.2
PATH_START = 10.0  # first penalty on the path: PATH_START × a James–Stein-type estimate
PATH_MAX = 1e6
LARGE_N_RATIO = 50.0  # pairs per parameter from which the path is skipped (penalty at its floor)
PATH_MIN_GAIN = 1e-5  # a path step must gain this much held-out loglik to continue
PATH_TOL = 1e-3  # solver tolerance on the path (the final fit uses ``tol``)
PATH_MAX_ITER = 60  # iteration limit of each path fit (model selection only; final fit: max_iter)
FLOOR_GROWTH = 0.05  # whitened top eigenvalue growth at the path's floor that flags separation
RAY_RATIO = 3.0  # the ray's penalty within this factor of the fitted one: accepted
RAY_ROUNDS = 4  # at most this many fold fits on the one-split ray search
RAY_MAX_ITER = 4  # iteration limit of a fold fit on the ray search (it only places the ray)


def stratified_folds(
    y: np.ndarray, kfold: bool, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
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


@dataclass(frozen=True, eq=False)
class AlphaChoice:
    """The penalty search's outcome: the chosen penalty ``beta``; ``start``, the validation fit
    on all pairs' span (clipped to the bound: the final fit's warm start) and ``warm_distances``,
    its distances on every pair in the final problem's row order when known (else None);
    ``path``, the (β, held-out loglik) tried; ``heldout``, (mean, 95 % interval, number of
    validation pairs); ``heldout_distances``, per pair (NaN if never held out); ``path_step``,
    the first fold's last solver step at the chosen penalty (at the first one on the ray): the
    final fit starts from it; ``separated``: the search says the data (nearly) separate the
    labels (``explore.py``'s docstring, "safeguards")."""

    beta: float
    start: np.ndarray
    warm_distances: np.ndarray | None
    path: list[tuple[float, float]]
    heldout: tuple[float, tuple[float, float], int]
    heldout_distances: np.ndarray
    path_step: float | None
    separated: bool


@dataclass(frozen=True, eq=False)
class _Fold:
    """One validation fold: its training part's problem, the held-out pairs (differences
    ``zv``, labels ``yv``, weights ``wv``), and the prior on the span clipped to the bound."""

    problem: Problem
    zv: np.ndarray
    yv: np.ndarray
    wv: np.ndarray
    prior: np.ndarray


@dataclass(frozen=True, eq=False)
class _Score:
    """All folds fitted at one penalty: the weighted mean held-out log-likelihood, and per
    validation pair (folds concatenated) its log-likelihood, distance and weight; each fold's fit.
    """

    mean: float
    per_pair: np.ndarray
    sols: list[np.ndarray]
    distances: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True, eq=False)
class _Search:
    """What the fits of one penalty search share: the folds and the solver settings, and what
    the fits leave behind — each penalty's ``_Score``, the first fold's last step size per
    penalty (``steps``) and each fold's last step size (the next fit of that fold starts there).
    """

    folds: list[_Fold]
    cap: float
    tol: float
    max_iter: int
    last_step: list[float | None]
    scores: dict[float, _Score] = field(default_factory=dict)
    steps: dict[float, float] = field(default_factory=dict)


def _fit_folds(search: _Search, beta: float, starts: list) -> tuple[float, list[np.ndarray]]:
    """Fit every fold at ``beta``, fold i from ``starts[i]`` (an array, or candidates of which
    ``better_start`` takes the better); record the score; return its mean and the fits."""
    sols, vals, dists = [], [], []
    for i, (fold, st) in enumerate(zip(search.folds, starts, strict=True)):
        prob = fold.problem
        cands = [st] if isinstance(st, np.ndarray) else list(st)
        st, d0 = (cands[0], None) if len(cands) == 1 else better_start(prob, beta, cands)
        res = prob.solve(
            beta, st, search.cap, search.tol, search.max_iter, t0=search.last_step[i], d0=d0
        )
        search.last_step[i] = res.step  # the next path fit starts from this step size
        if i == 0:
            search.steps[beta] = res.step
        sols.append(res.sigma)
        sig = prob.full(symmetrize(res.sigma))
        dists.append(np.maximum(quad_forms(fold.zv, sig), 0.0))
        vals.append(pair_loglik(dists[-1], fold.yv))
    per_pair = np.concatenate(vals)
    val_w = np.concatenate([fold.wv for fold in search.folds])
    mean = weighted_mean(per_pair, val_w)
    search.scores[beta] = _Score(mean, per_pair, sols, np.concatenate(dists), val_w)
    return mean, sols


def _initial_starts(search: _Search, init: str, random_state) -> list[np.ndarray]:
    """Each fold's unpenalised start (``initial_sigma``), clipped to the bound."""
    cap = search.cap
    return [
        clip_spectrum(
            initial_sigma(f.problem.zw, f.problem.blocks, f.problem.r, cap, init, random_state),
            cap,
        )
        for f in search.folds
    ]


def _walk(search: _Search, b0: float, sols0: list, best_v: float, floor: float) -> float:
    """The path over several folds from ``b0`` (fitted: ``sols0``, held-out ``best_v``): a
    decade at a time, first down (warm starts, ending exactly at the floor), then — if that
    gained nothing — up (warm start or the prior, whichever is better), each direction walked
    while the held-out gain exceeds ``PATH_MIN_GAIN``. Returns the best penalty."""
    best_b = b0
    for direction in (0.1, 10.0):
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
                else [(a, f.prior) for a, f in zip(sols, search.folds, strict=True)]
            )
            v, sols = _fit_folds(search, nxt, starts)
            if v <= best_v + PATH_MIN_GAIN:
                if v > best_v:
                    best_v, best_b = v, nxt
                break
            best_v, best_b, beta, moved = v, nxt, nxt, True
        if moved:
            break
    return best_b


def _at_floor(search: _Search, floor: float, init: str, random_state) -> float:
    """n ≫ d²: the penalty can only matter at the noise level; no path, a fit at the floor (≈
    the MLE, still finite on separable data), and at 10× the floor when the typical distance is
    large (is the floor what holds it? separation). Returns the better penalty."""
    best_v, sols0 = _fit_folds(search, floor, _initial_starts(search, init, random_state))
    if search.folds[0].problem.white_top(sols0[0]) > 3.0:
        v, _ = _fit_folds(search, 10.0 * floor, sols0)
        if v > best_v:
            return 10.0 * floor
    return floor


def _ray_search(
    search: _Search, b0: float, sol: np.ndarray, floor: float
) -> tuple[RayReading, dict[float, float]]:
    """One split (large n): read the ray through the fit ``sol`` at ``b0``; while its penalty
    lands more than ``RAY_RATIO``× from the fitted one, refit there (from the ray's point or
    the prior, whichever is better) and read again (``RAY_ROUNDS`` fits at most). Returns the
    last reading and the path: (β, held-out loglik) of each fit and of the chosen point."""
    fold, beta, path = search.folds[0], b0, {}
    for _ in range(RAY_ROUNDS):
        ray = ray_choice(
            fold.problem, fold.zv, fold.yv, fold.wv, beta, symmetrize(sol), floor, PATH_MAX
        )
        path[beta] = ray.at_fit
        ratio = ray.beta / beta
        if 1.0 / RAY_RATIO <= ratio <= RAY_RATIO:
            break
        beta = ray.beta
        _, (sol,) = _fit_folds(search, beta, [(clip_spectrum(ray.sigma, search.cap), fold.prior)])
    path[ray.beta] = weighted_mean(ray.per_pair, fold.wv)
    return ray, path


def _growth(search: _Search, best: float, floor: float) -> float:
    """Relative growth of the whitened top eigenvalue between the two smallest penalties tried,
    when the chosen penalty is the floor (else 0)."""
    betas = sorted(search.scores)
    if best > floor * (1 + 1e-9) or len(betas) < 2:
        return 0.0
    prob = search.folds[0].problem
    a = prob.white_top(search.scores[betas[0]].sols[0])
    b = prob.white_top(search.scores[betas[1]].sols[0])
    return (a - b) / max(b, np.finfo(float).tiny)


def choose_alpha(
    z: np.ndarray,
    lab: np.ndarray,
    wts: np.ndarray,
    second: np.ndarray,
    full: Problem,
    folds: list[tuple[np.ndarray, np.ndarray]],
    cap: float,
    *,
    precision: str,
    tol: float,
    max_iter: int,
    init: str,
    random_state,
    fixed: float | None = None,
) -> AlphaChoice:
    """The penalty by held-out likelihood on ``folds`` ((train rows, validation rows) pairs):
    a path over several folds, the floor when n ≫ d², rays on one split; with ``fixed`` only
    that penalty is fitted on the folds (for its held-out figures). ``full``: the problem on
    all pairs (its prior, rows and metric); ``second``: the second moment ``ZᵀZ/n``; ``tol``,
    ``max_iter``, ``init``, ``random_state``, ``precision``: the estimator's settings."""
    n = lab.size
    tol, max_iter = max(float(tol), PATH_TOL), min(int(max_iter), PATH_MAX_ITER)
    parts = []
    for tr, va in folds:
        zv = z[va]
        c_tr = (n * second - zv.T @ zv) / tr.size
        prob = Problem(
            z, lab, full.prior, symmetrize(c_tr), precision, rows=tr, weights=wts, parent=full
        )
        parts.append(_Fold(prob, zv, lab[va], wts[va], clip_spectrum(prob.target, cap)))
    r = max(f.problem.r for f in parts)
    n_tr = min(f.problem.zw.shape[0] for f in parts)
    floor = 1.0 / n
    large_n = n_tr >= LARGE_N_RATIO * r * (r + 1) / 2.0
    one_split = fixed is None and not large_n and len(parts) == 1  # the rays
    if one_split:  # the ray's fold fit only places the ray (module docstring of explore.py)
        max_iter = min(max_iter, RAY_MAX_ITER)
    search = _Search(parts, cap, tol, max_iter, last_step=[None] * len(parts))
    ray, ray_path = None, {}
    if fixed is not None:
        starts = (
            [f.prior for f in parts] if fixed > 0.0 else _initial_starts(search, init, random_state)
        )
        _fit_folds(search, fixed, starts)
        best_b = fixed
    elif large_n:
        best_b = _at_floor(search, floor, init, random_state)
    else:
        b0 = float(np.clip(start_strength(parts[0].problem), floor, PATH_MAX))
        inits = _initial_starts(search, init, random_state)
        best_v, sols0 = _fit_folds(
            search, b0, [(f.prior, s) for f, s in zip(parts, inits, strict=True)]
        )
        if one_split:
            ray, ray_path = _ray_search(search, b0, sols0[0], floor)
            best_b = ray.beta
        else:
            best_b = _walk(search, b0, sols0, best_v, floor)
    if ray is not None:
        per_pair, distances, span_fit = ray.per_pair, ray.distances, ray.sigma
        val_w = parts[0].wv
        path = sorted(ray_path.items())
        top = parts[0].problem.white_top(span_fit)
        # held-out likelihood still rising at the end of the ray, beyond the PSD limit:
        # the data (nearly) separate the labels
        separated = bool(ray.s >= RAY_S_MAX * (1 - 1e-6) and top > SEPARATION_LEVEL)
        path_step = search.steps.get(b0)  # the fold fit at the first penalty
    else:
        score = search.scores[best_b]
        path = sorted((b, s.mean) for b, s in search.scores.items())
        per_pair, distances, val_w = score.per_pair, score.distances, score.weights
        span_fit = symmetrize(score.sols[0])
        separated = _growth(search, best_b, floor) > FLOOR_GROWTH
        path_step = search.steps.get(best_b)
    mean, interval = weighted_mean_ci(per_pair, val_w)
    heldout_distances = np.full(n, np.nan)
    heldout_distances[np.concatenate([va for _, va in folds])] = distances
    warm = full.to_span(parts[0].problem.full(span_fit))
    warm_distances = None
    if ray is not None and not np.isfinite(cap):
        # the ray point's distances are known on every pair (training part and validation
        # pairs): the final fit's warm start needs no n×d² product
        known = np.empty(n)
        known[parts[0].problem.rows] = ray.d_train
        known[folds[0][1]] = ray.distances
        warm_distances = known[full.rows]
    return AlphaChoice(
        beta=best_b,
        start=clip_spectrum(warm, cap),
        warm_distances=warm_distances,
        path=path,
        heldout=(mean, interval, per_pair.size),
        heldout_distances=heldout_distances,
        path_step=path_step,
        separated=separated,
    )
