"""How EXPLORE chooses its penalty ``β`` and measures held-out fit: the folds, the path of
penalties over them, the large-n floor, the one-split search along a ray. ``choose_alpha`` (called
by ``EXPLORE.fit_differences``) returns an ``AlphaChoice``; its steps share one ``_Search``:
``_fit_folds`` fits all folds at one penalty, ``_walk`` the path (k folds, or one split when the
PSD cone blocks the ray), ``_at_floor`` the large-n case, ``_ray_search`` the one split
(``_explore_ray``). Rules: ``explore.py``'s module docstring and docs/core.md."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._explore_problem import SEPARATION_LEVEL, Problem, clip_spectrum, second_moment
from ._explore_ray import RAY_S_MAX, RayReading, ray_choice
from ._explore_start import better_start, initial_sigma, start_strength, with_warm
from ._pairloss import (
    pair_loglik,
    paired_gains,
    prior_distances,
    quad_forms,
    take_rows,
    weighted_mean,
    weighted_mean_ci,
)
from ._validation import stratified_folds as stratified_folds
from .psd import symmetrize

PATH_MAX = 1e6
LARGE_N_RATIO = 50.0  # pairs per parameter from which the path is skipped (penalty at its floor)
PATH_MIN_GAIN = 1e-5  # a path step must gain this much held-out loglik to continue
PATH_TOL = 1e-3  # solver tolerance on the path (the final fit uses ``tol``)
PATH_MAX_ITER = 60  # iteration limit of each path fit (model selection only; final fit: max_iter)
FLOOR_TOL = 1e-5  # the floor's fold fits: held-out figures reproducible within ~2e-4 (sd 3e-5)
FLOOR_GROWTH = 0.05  # whitened top eigenvalue growth at the path's floor that flags separation
RAY_RATIO = 3.0  # the ray's penalty within this factor of the fitted one: accepted
RAY_ROUNDS = 4  # at most this many fold fits on the one-split ray search
RAY_MAX_ITER = 4  # iteration limit of a fold fit on the ray search (it only places the ray)


@dataclass(frozen=True, eq=False)
class AlphaChoice:
    """The penalty search's outcome: the chosen penalty ``beta``; ``start``, the validation fit
    on all pairs' span (clipped to the bound: the final fit's warm start) and ``warm_distances``,
    its distances on every pair in the final problem's row order when known (else None);
    ``path``, the (β, held-out loglik) tried; ``heldout``, (mean, 95 % interval, number of
    validation pairs); ``heldout_distances``, per pair (NaN if never held out); ``path_step``,
    the first fold's last solver step at the chosen penalty (at the first one on the ray): the
    final fit starts from it; ``separated``: the search says the data (nearly) separate the
    labels (``explore.py``'s docstring, "safeguards"); ``fold_fits``: each fold's fit at the
    chosen penalty (d × d; the ray's point on one split), a later refit's warm starts."""

    beta: float
    start: np.ndarray
    warm_distances: np.ndarray | None
    path: list[tuple[float, float]]
    heldout: tuple[float, tuple[float, float], int]
    heldout_distances: np.ndarray
    gains: dict
    path_step: float | None
    separated: bool
    fold_fits: tuple[np.ndarray, ...] = ()


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
    """All folds fitted at one penalty: the weighted mean held-out log-likelihood, per validation
    pair (folds concatenated) its log-likelihood, distance and weight; each fold's fit."""

    mean: float
    per_pair: np.ndarray
    sols: list[np.ndarray]
    distances: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True, eq=False)
class _Search:
    """What the fits of one penalty search share: the folds and the solver settings, and what
    the fits leave behind — each penalty's ``_Score``, the first fold's last step size per
    penalty (``steps``) and each fold's last step size (the next fit of that fold starts there)."""

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
    c = search.cap
    return [
        clip_spectrum(initial_sigma(p.zw, p.blocks, p.r, c, init, random_state), c)
        for p in (f.problem for f in search.folds)
    ]


def _walk(
    search: _Search, b0: float, sols0: list, best_v: float, floor: float, prior_v: float
) -> float:
    """The path over several folds from ``b0`` (fitted: ``sols0``, held-out ``best_v``): a
    decade at a time, first down (warm starts, ending exactly at the floor), then — if that
    gained nothing — up (warm start or the prior, whichever is better), each direction walked
    while the held-out gain exceeds ``PATH_MIN_GAIN``; when the fit at ``b0`` scores below the
    prior (``prior_v``: β₀ far too weak), down from ``PATH_MAX`` instead. Returns the best β."""
    if best_v < prior_v:
        return _walk_down_from_top(search, b0, inclusive=False)
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


def _walk_down_from_top(search: _Search, lowest: float, *, inclusive: bool) -> float:
    """Decades from ``PATH_MAX`` toward ``lowest`` (fitted when ``inclusive``), warm-started,
    while the held-out gain exceeds ``PATH_MIN_GAIN``. Returns the best penalty."""
    beta, sols = PATH_MAX, [f.prior for f in search.folds]
    best_v, sols = _fit_folds(search, beta, sols)
    best_b = beta
    while beta > lowest * (1 + 1e-9):
        beta = max(beta / 10.0, lowest)
        if beta == lowest and not inclusive:
            break
        v, sols = _fit_folds(search, beta, sols)
        if v <= best_v + PATH_MIN_GAIN:
            break
        best_v, best_b = v, beta
    return best_b


def _one_se(search: _Search, keep: np.ndarray | None = None) -> float:
    """The chosen penalty: the largest fitted (most shrinkage) whose held-out log-likelihood is
    within one paired standard error of the best one's (``keep``: only these pairs count)."""
    betas = sorted(search.scores)
    w = next(iter(search.scores.values())).weights
    w = w if keep is None else w * keep
    if not np.any(w > 0):
        return betas[-1]
    means = [weighted_mean(search.scores[b].per_pair, w) for b in betas]
    best = int(np.argmax(means))
    top = search.scores[betas[best]].per_pair
    for b in reversed(betas[best + 1 :]):
        diff = top - search.scores[b].per_pair
        mean, (lo, _) = weighted_mean_ci(diff, w)
        if mean <= (mean - lo) / 1.96:  # within one standard error
            return b
    return betas[best]


def _nested(search: _Search, best_b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out figures from pairs the penalty choice never scored: fold k's pairs are scored
    by fold k's fit at the penalty the same rule (``_one_se``) picks from the *other* folds'
    held-out pairs alone. Returns per validation pair (folds concatenated) the log-likelihood,
    the distance, and each fold's penalty."""
    sizes = [f.yv.size for f in search.folds]
    fold_of = np.repeat(np.arange(len(sizes)), sizes)
    per_pair = search.scores[best_b].per_pair.copy()
    distances = search.scores[best_b].distances.copy()
    betas = np.full(len(sizes), best_b)
    if len(sizes) < 2:
        return per_pair, distances, betas
    for k in range(len(sizes)):
        betas[k] = _one_se(search, fold_of != k)
        mine = fold_of == k
        per_pair[mine] = search.scores[betas[k]].per_pair[mine]
        distances[mine] = search.scores[betas[k]].distances[mine]
    return per_pair, distances, betas


def _at_floor(search: _Search, floor: float, init: str, random_state, warm) -> float:
    """n ≫ d²: the penalty can only matter at the noise level; no path, a fit at the floor (≈
    the MLE, still finite on separable data), and at 10× the floor when the typical distance is
    large (separation?). Returns the better penalty. ``warm``: a refit's fold fits (starts)."""
    starts = _initial_starts(search, init, random_state)
    starts = with_warm(starts, [f.problem for f in search.folds], warm, search.cap)
    best_v, sols0 = _fit_folds(search, floor, starts)
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
        if ray.blocked or 1.0 / RAY_RATIO <= ratio <= RAY_RATIO:
            break
        beta = ray.beta
        _, (sol,) = _fit_folds(search, beta, [(clip_spectrum(ray.sigma, search.cap), fold.prior)])
    path[ray.beta] = weighted_mean(ray.per_pair, fold.wv)
    return ray, path


def _baselines(parts: list[_Fold], lab: np.ndarray, wts: np.ndarray, folds: list) -> dict:
    """Per validation pair (fold by fold): loglik of the constant (training rate) and prior."""
    const, prior = [], []
    for fold, (tr, _) in zip(parts, folds, strict=True):
        rate = float(np.clip(weighted_mean(lab[tr], wts[tr]), 1e-6, 1 - 1e-6))
        const.append(fold.yv * np.log(rate) + (1 - fold.yv) * np.log1p(-rate))
        prior.append(pair_loglik(prior_distances(fold.zv, fold.problem.prior), fold.yv))
    return {"constant": const, "prior": prior}


def _growth(search: _Search, best: float, floor: float) -> float:
    """Growth of the whitened top eigenvalue from the 2nd smallest penalty to the floor, or 0."""
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
    warm_folds: tuple | None = None,
    fold_priors: list | None = None,
) -> AlphaChoice:
    """The penalty by held-out likelihood on ``folds`` ((train, validation) rows): a path over
    several folds, the floor when n ≫ d², rays on one split; ``fixed``: only that penalty.
    ``full``: the problem on all pairs (its prior unless ``fold_priors`` gives each fold's);
    ``second``: ``ZᵀZ/n``; ``warm_folds``: a previous refit's ``fold_fits`` (floor starts)."""
    n = lab.size
    path_tol, path_iter = max(float(tol), PATH_TOL), min(int(max_iter), PATH_MAX_ITER)
    parts, priors = [], fold_priors or [full.prior] * len(folds)
    for (tr, va), prior in zip(folds, priors, strict=True):
        zv = take_rows(z, va)
        c_tr = (n * second - second_moment(zv) * va.size) / tr.size
        prob = Problem(
            z, lab, prior, symmetrize(c_tr), precision, rows=tr, weights=wts, parent=full
        )
        parts.append(_Fold(prob, zv, lab[va], wts[va], clip_spectrum(prob.target, cap)))
    full.release()  # pairs from indices: its per-pair arrays wait (bounded memory)
    r, n_tr = max(f.problem.r for f in parts), min(f.problem.zw.shape[0] for f in parts)
    floor = 1.0 / n
    large_n = n_tr >= LARGE_N_RATIO * r * (r + 1) / 2.0
    one_split = fixed is None and not large_n and len(parts) == 1  # the rays
    if large_n:  # no path: the floor's fold fits are the held-out figures, converged (core.md)
        path_tol, path_iter = min(float(tol), FLOOR_TOL), int(max_iter)
    ray_iter = min(path_iter, RAY_MAX_ITER) if one_split else path_iter  # it places the ray
    search = _Search(parts, cap, path_tol, ray_iter, last_step=[None] * len(parts))
    baselines = _baselines(parts, lab, wts, folds)
    val_w = np.concatenate([f.wv for f in parts])
    ray, ray_path, best_b = None, {}, fixed
    if fixed is not None:
        starts = (
            [f.prior for f in parts] if fixed > 0.0 else _initial_starts(search, init, random_state)
        )
        _fit_folds(search, fixed, starts)
    elif large_n:
        best_b = _at_floor(search, floor, init, random_state, warm_folds)
    else:
        b0 = float(np.clip(start_strength(parts[0].problem), floor, PATH_MAX))
        if not one_split and n_tr < r * (r + 1) / 2.0:  # fewer pairs than parameters
            _walk_down_from_top(search, floor, inclusive=True)  # near-prior fits: cheap
        else:
            inits = _initial_starts(search, init, random_state)
            starts = [(f.prior, s) for f, s in zip(parts, inits, strict=True)]
            best_v, sols0 = _fit_folds(search, b0, starts)
            if one_split:
                ray, ray_path = _ray_search(search, b0, sols0[0], floor)
            if one_split and ray.blocked:  # the PSD cone cut the ray short: walk the path
                best_v = search.scores[b0].mean  # down from the fit at b0 (its first step)
                ray, search = None, _Search(parts, cap, path_tol, path_iter, [None])
            if ray is None:
                prior_v = weighted_mean(np.concatenate(baselines["prior"]), val_w)
                _walk(search, b0, sols0, best_v, floor, prior_v)
        best_b = ray.beta if ray is not None else _one_se(search)
    if ray is not None:
        per_pair, distances, span_fit = ray.per_pair, ray.distances, ray.sigma
        val_w = parts[0].wv
        path = sorted(ray_path.items())
        top = parts[0].problem.white_top(span_fit)
        # held-out likelihood still rising at the ray's end, past the PSD limit: separation
        separated = bool(ray.s >= RAY_S_MAX * (1 - 1e-6) and top > SEPARATION_LEVEL)
        path_step = search.steps.get(b0)  # the fold fit at the first penalty
        fold_fits = (parts[0].problem.full(span_fit),)
    else:
        score = search.scores[best_b]
        path = sorted((b, s.mean) for b, s in search.scores.items())
        per_pair, distances, _ = _nested(search, best_b)
        span_fit = symmetrize(score.sols[0])
        separated = _growth(search, best_b, floor) > FLOOR_GROWTH
        path_step = search.steps.get(best_b)
        fold_fits = tuple(map(lambda f, s: f.problem.full(symmetrize(s)), parts, score.sols))
    fits = None if ray is not None else [f.yv.size for f in parts]  # fits as random effects
    mean, interval = weighted_mean_ci(per_pair, val_w, fits)
    gains = paired_gains(
        per_pair, {k: np.concatenate(b) for k, b in baselines.items()}, val_w, fits
    )
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
        gains=gains,
        heldout_distances=heldout_distances,
        path_step=path_step,
        separated=separated,
        fold_fits=fold_fits,
    )
