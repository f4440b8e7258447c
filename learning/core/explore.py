"""EXPLORE: a Mahalanobis fair metric learned from pairs labelled comparable / incomparable.

Model (the seed paper's binary response model)::

    P(y = 1 | z) = 2σ(-d),    d = zᵀΣz,    z = φ(x₁) - φ(x₂),    Σ ≽ 0,

fitted by maximising the concave mean log-likelihood

    ℓ(Σ) = (1/n) Σ_i [ y_i log(2σ(-d_i)) + (1 - y_i) log(1 - 2σ(-d_i)) ]
         = (1/n) Σ_i [ y_i (log 2 - softplus(d_i)) + (1 - y_i) log tanh(d_i / 2) ]

over PSD matrices, with the safeguards below. Labels may be soft (``y ∈ [0, 1]``, e.g. 0.5 for
"unsure"): the objective is then the expected log-likelihood, still concave.

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
``alpha="auto"`` (default) chooses ``β`` by held-out log-likelihood: stratified validation
(5 folds below 2,000 pairs, else one 80/20 split, deterministic), a path ``β₀·10^{±k}`` from a
James–Stein-type estimate ``β₀ = 10 · 2·noise / (signal - noise)`` (``signal``: the Newton
decrement of the likelihood at the prior; ``noise = p/(2·n_train)``, ``p = r(r+1)/2``; see
``_start_strength``), each fit warm-started from the previous one (or the prior when the penalty
grows, whichever is better; tol 1e-3, at most 60 iterations), walking in the improving direction until the held-out gain falls below 1e-5,
never below the floor ``β = 1/n``. When ``n_train ≥ 50 · r(r+1)/2`` (n ≫ d²) the path is skipped
and ``β = 1/n`` (≈ the MLE). The final fit uses all pairs at the chosen ``β`` (``alpha_``;
``alpha_path_`` lists (β, held-out loglik) tried). A float ``alpha`` fixes ``β`` (0: plain MLE).

Held-out likelihood. ``heldout_loglik_`` is the mean per-pair log-likelihood of the validation
pairs under the fits that did not see them, at the chosen ``β``; ``heldout_loglik_ci_`` a 95 %
interval (± 1.96 per-pair standard errors); ``heldout_n_`` the number of validation pairs. It
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
from ._pairloss import PairBlocks, curvature, pair_loglik, quad_forms, weighted_gram
from .psd import projector, sqrtm_psd, symmetrize, validate_sigma

__all__ = ["EXPLORE", "ExploreShortfall", "explore_shortfall", "pair_loglik"]

AUTO_CAP_FACTOR = 100.0
MIN_ANSWERS = 20  # explore_shortfall: answers needed, with both labels present
SPAN_RTOL = 1e-10  # second-moment eigenvalues ≤ SPAN_RTOL·max are directions the data miss
KFOLD_BELOW = 2000  # below this many pairs: N_FOLDS-fold validation, else one split
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


def _second_moment(z: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``ZᵀZ/n`` in float64 (chunked)."""
    out = np.zeros((z.shape[1], z.shape[1]))
    for start in range(0, z.shape[0], chunk):
        zc = z[start : start + chunk]
        out += zc.T @ zc
    return symmetrize(out / z.shape[0])


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


def _better_start(prob, beta: float, starts: list) -> np.ndarray:
    """The start with the smaller penalised objective ``-ℓ + (β/2) tr(CΔCΔ)`` on ``prob``."""

    def objective(s: np.ndarray) -> float:
        delta = s - prob.target
        ll = prob.blocks.loglik(quad_forms(prob.zw, s))
        return -ll + 0.5 * beta * float(np.sum((prob.weight @ delta @ prob.weight) * delta))

    vals = [objective(s) for s in starts]
    return starts[int(np.argmin(vals))]


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


def _folds(y: np.ndarray, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Deterministic stratified validation folds: K-fold below ``KFOLD_BELOW`` pairs, else one
    ``VALIDATION_FRACTION`` split. Each training part keeps both labels when the data have them.
    """
    n = y.size
    rng = np.random.default_rng(seed)
    cls = np.where(y > 0.5, 1, np.where(y < 0.5, 0, 2))
    key = np.empty(n, dtype=np.int64)
    for c in (0, 1, 2):
        idx = np.flatnonzero(cls == c)
        key[idx[rng.permutation(idx.size)]] = np.arange(idx.size)
    if n < KFOLD_BELOW:
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
    ) -> None:
        d = z.shape[1]
        w, v = np.linalg.eigh(second)
        top = max(float(w[-1]), np.finfo(float).tiny)
        r = int(np.sum(w > SPAN_RTOL * top))
        self.d, self.r = d, r
        if r == d:
            self.u = None
            zr, self.second = z, second
        else:
            self.u = v[:, d - r :]
            zr, self.second = z @ self.u, np.diag(w[d - r :])
        self.prior = prior
        self.target = prior if self.u is None else self.u.T @ prior @ self.u
        order = PairBlocks.order(y)
        self.blocks = PairBlocks.from_sorted(y[order])
        work = np.float32 if precision == "mixed" else np.float64
        self.zw = np.ascontiguousarray(zr[order], dtype=work)
        self.y = y
        # Penalty metric: the curvature-weighted second moment at the prior (the Fisher weights
        # of the pair model there), so that (β/2)·tr(WΔWΔ) approximates β × the KL divergence
        # from the prior's response model, and equals the solver's first preconditioner.
        self.d_prior = quad_forms(self.zw, self.target)
        h = curvature(self.d_prior, self.blocks.y)
        h = np.minimum(h, np.quantile(h, 0.99))
        self.weight = symmetrize(weighted_gram(self.zw, h) / self.zw.shape[0])

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
        curvature-weighted second moment at the prior. "auto": chosen on a path by held-out
        likelihood; a float fixes it (0: the plain MLE).
    validate : bool
        With a fixed ``alpha``, also fit it on the validation folds to report
        ``heldout_loglik_`` (else NaN). Always done with ``alpha="auto"``.

    Attributes
    ----------
    sigma_, loglik_ (mean log-likelihood of ``sigma_`` on all pairs), n_iter_, converged_,
    projected_gradient_norm_, max_eigenvalue_, n_features_in_; and ``alpha_``, ``alpha_path_``
    (tuple of (alpha, held-out loglik) tried), ``heldout_loglik_``, ``heldout_loglik_ci_``
    (95 % interval), ``heldout_n_``, ``n_constrained_`` (dimension of the span of the
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
        short = explore_shortfall(lab)
        if not short.ok:
            raise ValueError(short.message)
        notes: list[str] = []
        cap = self._resolve_cap(sq, d)
        second = _second_moment(z)
        prior, scale = self._resolve_prior(z, lab, d, notes)
        full = _Problem(z, lab, prior, second, self.precision)
        tol, max_iter = float(self.tol), int(self.max_iter)
        path: list[tuple[float, float]] = []
        heldout = (np.nan, (np.nan, np.nan), 0)
        if self.alpha == "auto":
            beta, start, path, heldout = self._choose_alpha(z, lab, second, prior, full, cap)
        elif self.validate:
            beta = float(self.alpha)
            _, start, path, heldout = self._choose_alpha(
                z, lab, second, prior, full, cap, fixed=beta
            )
        else:
            beta = float(self.alpha)
            start = None
        if start is not None and beta > 0.0:
            # warm start or the prior, whichever the penalised objective prefers (the fold's
            # optimum is noisy in many directions; near the prior the problem is well conditioned)
            start = _better_start(full, beta, [start, _clip(full.target, cap)])
        if start is None:
            start = (
                self._initial_sigma(full.zw, full.blocks, full.r, cap)
                if beta == 0.0
                else _clip(full.target, cap)
            )
        t0 = getattr(self, "_path_step", None) if (self.alpha == "auto" or self.validate) else None
        res = full.solve(beta, start, cap, tol, max_iter, t0=t0)
        w, v = np.linalg.eigh(symmetrize(res.sigma))
        s_span = symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)
        sigma = full.full(s_span)
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
        self.n_constrained_ = full.r
        self.prior_ = prior
        self.prior_scale_ = scale
        self.alpha_ = beta
        self.alpha_path_ = tuple(path)
        self.heldout_loglik_ = heldout[0]
        self.heldout_loglik_ci_ = heldout[1]
        self.heldout_n_ = heldout[2]
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
        a = self.alpha
        if not (
            a == "auto" or (isinstance(a, (int, float)) and not isinstance(a, bool) and a >= 0)
        ):
            raise ValueError(f"alpha must be 'auto' or a number ≥ 0, got {a!r}")
        ps = self.prior_scale
        if not (ps == "auto" or (isinstance(ps, (int, float)) and ps > 0)):
            raise ValueError(f"prior_scale must be 'auto' or a positive number, got {ps!r}")

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

    def _resolve_prior(
        self, z: np.ndarray, lab: np.ndarray, d: int, notes: list[str]
    ) -> tuple[np.ndarray, float]:
        shape = np.eye(d) if self.prior is None else validate_sigma(self.prior, name="prior")
        if shape.shape != (d, d):
            raise ValueError(f"prior must be a ({d}, {d}) matrix, got {shape.shape}")
        if self.prior_scale != "auto":
            return shape * float(self.prior_scale), float(self.prior_scale)
        stride = max(1, z.shape[0] // 20000)
        sub_z, sub_y = z[::stride], lab[::stride]
        if not (np.any(sub_y > 0) and np.any(sub_y < 1)):
            sub_z, sub_y = z, lab
        q = quad_forms(sub_z, shape)
        if not np.any(q > 0):
            notes.append("the prior gives every pair distance 0; its scale is left at 1")
            return shape, 1.0
        c, _ = _best_scale(q, sub_y, 1e6 / max(float(np.mean(q)), np.finfo(float).tiny))
        return shape * c, c

    def _choose_alpha(self, z, lab, second, prior, full, cap, fixed: float | None = None):
        """Penalty path on validation folds (module docstring, "regularisation"); with ``fixed``
        only that penalty is fitted on the folds (for its held-out figure)."""
        n = lab.size
        tol, max_iter = max(float(self.tol), PATH_TOL), min(int(self.max_iter), PATH_MAX_ITER)
        probs = []
        for tr, va in _folds(lab):
            zv = z[va]
            c_tr = (n * second - zv.T @ zv) / tr.size
            prob = _Problem(z[tr], lab[tr], prior, symmetrize(c_tr), self.precision)
            probs.append({"p": prob, "zv": zv, "yv": lab[va], "s": _clip(prob.target, cap)})
        r = max(pr["p"].r for pr in probs)
        n_tr = min(pr["p"].zw.shape[0] for pr in probs)
        floor = 1.0 / n
        b0 = float(np.clip(_start_strength(probs[0]["p"]), floor, PATH_MAX))
        scores: dict[float, tuple[float, np.ndarray, list]] = {}

        steps: dict[float, float] = {}
        last_step: list[float | None] = [None] * len(probs)

        def run(beta: float, starts: list) -> tuple[float, list]:
            sols, vals = [], []
            for i, (pr, st) in enumerate(zip(probs, starts, strict=True)):
                cands = [st] if isinstance(st, np.ndarray) else list(st)
                st = cands[0] if len(cands) == 1 else _better_start(pr["p"], beta, cands)
                res = pr["p"].solve(beta, st, cap, tol, max_iter, t0=last_step[i])
                last_step[i] = res.step  # the next path fit starts from this step size
                if i == 0:
                    steps[beta] = res.step
                sols.append(res.sigma)
                sig = pr["p"].full(symmetrize(res.sigma))
                vals.append(pair_loglik(quad_forms(pr["zv"], sig), pr["yv"]))
            per_pair = np.concatenate(vals)
            scores[beta] = (float(per_pair.mean()), per_pair, sols)
            return scores[beta][0], sols

        if fixed is not None:
            b0 = fixed
            starts = [
                _clip(
                    pr["p"].target
                    if fixed > 0.0
                    else self._initial_sigma(pr["p"].zw, pr["p"].blocks, pr["p"].r, cap),
                    cap,
                )
                for pr in probs
            ]
            best_v, sols0 = run(b0, starts)
            best_b = b0
            directions = ()
        elif n_tr >= LARGE_N_RATIO * r * (r + 1) / 2.0:
            # n ≫ d²: the penalty can only matter at the noise level; skip the path and fit at
            # the floor (≈ the MLE, still finite on separable data), one validation fit.
            b0 = floor
            starts = [
                _clip(self._initial_sigma(pr["p"].zw, pr["p"].blocks, pr["p"].r, cap), cap)
                for pr in probs
            ]
            best_v, sols0 = run(b0, starts)
            best_b = b0
            directions = ()
            if _white_top(probs[0]["p"], sols0[0]) > 3.0:
                # a large typical distance: check whether the floor is what holds it (separation)
                v, _ = run(10.0 * floor, sols0)
                if v > best_v:
                    best_v, best_b = v, 10.0 * floor
        else:
            init = [
                _clip(self._initial_sigma(pr["p"].zw, pr["p"].blocks, pr["p"].r, cap), cap)
                for pr in probs
            ]
            best_v, sols0 = run(b0, [(pr["s"], i) for pr, i in zip(probs, init, strict=True)])
            best_b = b0
            directions = (0.1, 10.0)
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
        path = sorted((b, v[0]) for b, v in scores.items())
        per_pair = scores[best_b][1]
        m = per_pair.size
        se = float(np.std(per_pair, ddof=1) / np.sqrt(m)) if m > 1 else np.inf
        mean = float(per_pair.mean())
        heldout = (mean, (mean - 1.96 * se, mean + 1.96 * se), m)
        warm = full.to_span(probs[0]["p"].full(symmetrize(scores[best_b][2][0])))
        self._path_top = _growth(scores, probs, best_b, floor)
        self._path_step = steps.get(best_b)
        return best_b, _clip(warm, cap), path, heldout

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
