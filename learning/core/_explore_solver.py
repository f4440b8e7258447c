"""Preconditioned accelerated projected gradient (FISTA) for EXPLORE's likelihood.

Problem: minimise ``F(Σ) = -(1/n) Σ_i ℓ(z_iᵀΣz_i, y_i)`` over ``K = {Σ : 0 ≼ Σ ≼ c·I}``
(``c = ∞`` allowed). ``F`` is convex and smooth on the interior of its domain, and
``∇F(Σ) = -(1/n) Zᵀ diag(∂ℓ/∂d) Z``.

Preconditioning. Pair differences are typically very anisotropic (large along sensitive
directions, small along relevant ones) and the Hessian ``(1/n) Σ h_i (z_i⊗z_i)(z_i⊗z_i)ᵀ`` is
then badly conditioned (plain projected gradient needs thousands of iterations). We change
variables ``Σ = L⁻ᵀ M L⁻¹`` with ``L Lᵀ = C_h = (1/n) Σ h_i z_i z_iᵀ`` (the curvature-weighted
second moment at the current iterate), so that the whitened differences ``z̃ = L⁻¹z`` satisfy
``E[h z̃ z̃ᵀ] = I``. For such data the Hessian is close to ``Δ ↦ 2Δ + tr(Δ) I`` (exact for
Gaussian ``z̃`` and constant ``h``), so we measure steps in the metric
``‖Δ‖²_H = ‖Δ‖²_F + ½ tr(Δ)²``. Both the preconditioned gradient
``H⁻¹G = G - tr(G) I / (2 + d)`` and the ``H``-metric projection onto the PSD cone
(``V diag(max(w - τ, 0)) Vᵀ`` with a scalar shift ``τ`` found exactly) are closed-form.
The eigenvalue cap becomes ``M ≼ c LᵀL``, which is not spectral in ``M``: when the PSD step
violates it, the exact ``H``-metric projection onto the intersection is computed by Dykstra's
algorithm (two closed-form projections, d×d work only).

Iteration. FISTA with backtracking on the quadratic upper bound (each step starts from 1.25×
the last one, or from the step the curvature measured along the last step allows, at most 10×,
so that a step cut short near the ``d → 0`` barrier recovers at once), function-value restart (a step that increases ``F`` is rejected and momentum reset),
and a preconditioner refresh at iterations 0, 20, 40, ... (each refresh restarts momentum;
starting from the moment-based ``c·C⁻¹`` point one refresh is usually enough).
Distances of the extrapolated point are the same combination of the stored distances
(``d`` is linear in ``Σ``), so each iteration costs one weighted Gram matrix (SYRK) and one
``Z Σ`` product per trial step.

Penalties (used by ``explore``): ``solve(..., ridge=β, second=W, target=Π)`` minimises
``F + (β/2)·tr(W(Σ-Π)W(Σ-Π))``; when ``W`` is the first preconditioner ``C_h`` this is
``(β/2)‖M - M_Π‖²_F`` in the whitened variable, so the step metric becomes
``‖Δ‖² + tw·tr(Δ)²`` with ``tw = 1/(2 + β)`` and the model step ``t = tw`` (the whitened Hessian
is about ``(2 + β)Δ + tr(Δ)I``); without this, large ``β`` made steps along ``I`` ~d/2 times too
short. ``alpha`` adds the linear ``α·mean_i d_i = α·tr(CΣ)`` (kept for experiments; EXPLORE uses
the ridge). ``t0`` starts from a neighbouring problem's step size; the result carries ``step``; ``d0``
(optional) are the start's distances, when the caller has them.

Stopping rule: two consecutive accepted steps each decrease ``F`` by at most ``tol`` and
``max(t, ½)·‖G_t‖²_H / 2 ≤ tol``, where ``G_t = (Y - M⁺)/t`` is the gradient mapping (projected
gradient) and ``t = ½`` is the step the whitened model predicts: the decrease a further gradient
step could still promise is below ``tol``. A rejected step restores the step size it started
from, so one bad extrapolation cannot collapse ``t`` (and fake convergence).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._pairloss import PairBlocks, quad_forms, weighted_gram

_TRACE_WEIGHT = 0.5
METRIC_RTOL = 1e-8


@dataclass(frozen=True)
class SolverResult:
    sigma: np.ndarray
    objective: float  # minimised F = -mean loglik (work precision)
    n_iter: int
    converged: bool
    projected_gradient_norm: float
    step: float = float("nan")  # last step size (a warm start for a neighbouring problem)


def _shift_root(w: np.ndarray, upper: float, tw: float = _TRACE_WEIGHT) -> float:
    """Root τ of ``τ - β(Σ clip(w - τ, 0, upper) - Σ w)`` (strictly increasing, piecewise linear)."""
    sw = float(w.sum())

    def f(tau: np.ndarray) -> np.ndarray:
        return tau - tw * (np.clip(w[None, :] - tau[:, None], 0.0, upper).sum(1) - sw)

    bp = w if not np.isfinite(upper) else np.concatenate([w, w - upper])
    bp = np.unique(bp)
    pts = np.concatenate([[bp[0] - 1.0], bp, [bp[-1] + 1.0]])
    vals = f(pts)
    k = int(np.searchsorted(vals, 0.0))
    k = min(max(k, 1), pts.size - 1)
    x0, x1, f0, f1 = pts[k - 1], pts[k], vals[k - 1], vals[k]
    return float(x0 - f0 * (x1 - x0) / (f1 - f0))


def _h_project_psd(x: np.ndarray, upper: float = np.inf, tw: float = _TRACE_WEIGHT) -> np.ndarray:
    """``H``-metric projection of symmetric ``x`` onto ``{0 ≼ M ≼ upper·I}``."""
    w, v = np.linalg.eigh((x + x.T) / 2.0)
    tau = _shift_root(w, upper, tw)
    return (v * np.clip(w - tau, 0.0, upper)) @ v.T


def _h_norm2(delta: np.ndarray, tw: float = _TRACE_WEIGHT) -> float:
    return float(np.sum(delta * delta) + tw * np.trace(delta) ** 2)


def _precondition(g: np.ndarray, tw: float = _TRACE_WEIGHT) -> np.ndarray:
    """``H⁻¹ G`` for ``H(Δ) = Δ + ½ tr(Δ) I``."""
    d = g.shape[0]
    return g - (tw * np.trace(g) / (1.0 + tw * d)) * np.eye(d)


class _Metric:
    """Change of variables ``Σ = A M Aᵀ`` with ``A = L⁻ᵀ``, ``L Lᵀ = C_h``.

    ``L = V diag(√w)`` from the eigendecomposition ``C_h = V diag(w) Vᵀ``, with ``w`` floored at
    ``METRIC_RTOL · max w``: any ``L`` with ``LLᵀ ≈ C_h`` is a valid preconditioner, and unlike a
    Cholesky factor this one exists for a singular or float32-rounded ``C_h`` (pairs spanning a
    subspace, a coordinate that never varies, curvature weights near zero).
    """

    def __init__(self, c: np.ndarray) -> None:
        w, v = np.linalg.eigh((c + c.T) / 2.0)
        top = max(float(w[-1]), np.finfo(float).tiny)
        w = np.maximum(w, METRIC_RTOL * top)
        root = np.sqrt(w)
        self.l = v * root
        self.linv = (v / root).T
        self.b = self.l.T @ self.l  # M ≼ cap·B  ⟺  Σ ≼ cap·I

    def to_m(self, s: np.ndarray) -> np.ndarray:
        return self.l.T @ s @ self.l

    def to_sigma(self, m: np.ndarray) -> np.ndarray:
        s = self.linv.T @ m @ self.linv
        return (s + s.T) / 2.0

    def grad_to_m(self, g: np.ndarray) -> np.ndarray:
        gm = self.linv @ g @ self.linv.T
        return (gm + gm.T) / 2.0


def _project(
    x: np.ndarray,
    metric: _Metric,
    cap: float,
    tol: float = 1e-10,
    max_rounds: int = 500,
    tw: float = _TRACE_WEIGHT,
) -> np.ndarray:
    """Exact ``H``-metric projection of ``x`` onto ``{M ≽ 0, A M Aᵀ ≼ cap·I}``."""
    m = _h_project_psd(x, tw=tw)
    if not np.isfinite(cap):
        return m
    if np.linalg.eigvalsh(metric.to_sigma(m))[-1] <= cap * (1.0 + 1e-12):
        return m
    cb = cap * metric.b
    # Dykstra: alternate the PSD cone and {M ≼ cap·B} = cap·B - PSD, both in the H metric.
    cur = x.copy()
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    for _ in range(max_rounds):
        yk = _h_project_psd(cur + p, tw=tw)
        p = cur + p - yk
        nxt = cb - _h_project_psd(cb - (yk + q), tw=tw)
        q = yk + q - nxt
        change = np.linalg.norm(nxt - cur)
        cur = nxt
        if change <= tol * max(1.0, np.linalg.norm(cur)):
            break
    # Make the result exactly feasible in Σ-space (the Dykstra limit is, up to rounding).
    return metric.to_m(_clip_sigma(metric.to_sigma(cur), cap))


def _clip_sigma(s: np.ndarray, cap: float) -> np.ndarray:
    w, v = np.linalg.eigh(s)
    return (v * np.clip(w, 0.0, cap)) @ v.T


REFRESH_GROWTH = (1, 20)


def _refresh_iterations(max_iter: int) -> set[int]:
    out, k = set(), 0
    while k <= max_iter:
        out.add(k)
        k = REFRESH_GROWTH[0] * k + REFRESH_GROWTH[1]
    return out


class _TrialPoints:
    """Projected trial points ``M⁺(t) = Π(Y - t·P)`` and their distances, computed cheaply.

    With ``X = Y - tP = V diag(w) Vᵀ`` and shift ``τ``, ``M⁺ = V_K diag(w_K - τ) V_Kᵀ`` where
    ``K`` are the kept eigenvalues and ``J`` the clipped ones. Two ways to get ``d(M⁺)``:
    directly from the factor (n·d·|K| flops), or as the correction
    ``d(Y) - t·d(P) - τ·q - Σ_{j∈J} (w_j - τ)(z_iᵀ A v_j)²`` (n·d·|J| flops once ``d(P)`` and
    ``q_i = ‖L⁻¹z_i‖²`` are known, each one n·d² product, computed on first use only).
    Each trial takes the cheaper way.
    """

    def __init__(
        self,
        z: np.ndarray,
        metric: _Metric,
        m_y: np.ndarray,
        d_y: np.ndarray,
        step_m: np.ndarray,
        cache: dict,
        cap: float,
    ) -> None:
        self.z, self.metric, self.m_y, self.d_y, self.step_m = z, metric, m_y, d_y, step_m
        self.cache, self.cap = cache, cap
        self.tw = _TRACE_WEIGHT
        self.d_step: np.ndarray | None = None

    def _factor_distances(self, vecs: np.ndarray, vals: np.ndarray) -> np.ndarray:
        if vals.size == 0:
            return np.zeros(self.z.shape[0])
        u = (self.metric.linv.T @ vecs).astype(self.z.dtype)
        out = np.empty(self.z.shape[0])
        for start in range(0, self.z.shape[0], 8192):  # 8,192 rows: temporaries stay in cache
            zu = self.z[start : start + 8192] @ u
            out[start : start + 8192] = (zu * zu) @ vals.astype(self.z.dtype)
        return out

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        x = self.m_y - t * self.step_m
        w, v = np.linalg.eigh((x + x.T) / 2.0)
        tau = _shift_root(w, np.inf, self.tw)
        kept = w - tau > 0.0
        m_new = (v[:, kept] * (w[kept] - tau)) @ v[:, kept].T
        if np.isfinite(self.cap) and (
            np.linalg.eigvalsh(self.metric.to_sigma(m_new))[-1] > self.cap * (1.0 + 1e-12)
        ):
            m_new = _project(x, self.metric, self.cap, tw=self.tw)
            w2, v2 = np.linalg.eigh(m_new)
            pos = w2 > 0
            return m_new, self._factor_distances(v2[:, pos], w2[pos])
        dim = w.size
        n_kept, n_clip = int(kept.sum()), int((~kept).sum())
        # one-off products (d(P) per iteration, q per preconditioner) are shared by the
        # iteration's trial steps (about two) and the refresh period: count them amortised
        cost_corr = n_clip + 0.5 * dim * (self.d_step is None) + 0.1 * dim * ("q" not in self.cache)
        if n_kept <= cost_corr:
            return m_new, self._factor_distances(v[:, kept], w[kept] - tau)
        if self.d_step is None:
            self.d_step = quad_forms(self.z, self.metric.to_sigma(self.step_m))
        if "q" not in self.cache:
            self.cache["q"] = quad_forms(self.z, self.metric.linv.T @ self.metric.linv)
        corr = self._factor_distances(v[:, ~kept], w[~kept] - tau)
        corr += tau * self.cache["q"]  # in place: two n-vectors at a time, not four
        out = np.multiply(self.d_step, -t)
        out += self.d_y
        out -= corr
        return m_new, out


def solve(
    z: np.ndarray,
    blocks: PairBlocks,
    sigma0: np.ndarray,
    *,
    cap: float,
    tol: float,
    max_iter: int,
    alpha: float = 0.0,
    second: np.ndarray | None = None,
    ridge: float = 0.0,
    target: np.ndarray | None = None,
    t0: float | None = None,
    callback=None,
    d0: np.ndarray | None = None,
) -> SolverResult:
    """Minimise ``F + α·mean_i d_i`` from the feasible start ``sigma0``; ``z`` rows sorted as
    ``blocks``; ``second = ZᵀZ/n`` (needed when ``α > 0``: the penalty's gradient is ``α·second``).
    """
    n = z.shape[0]
    if alpha > 0.0 and second is None:
        second = weighted_gram(z, np.ones(n)) / n

    if ridge > 0.0 and second is None:
        second = weighted_gram(z, np.ones(n)) / n
    tgt = np.zeros_like(sigma0) if target is None else target
    # Trace weight of the step metric: the whitened Hessian is about 2Δ + tr(Δ)I for the
    # likelihood and βΔ for the ridge (exact when ``second`` is the first preconditioner), so
    # the metric ‖Δ‖² + tw·tr(Δ)² with tw = 1/(2 + β) keeps the steps well scaled along I.
    tw = 1.0 / (2.0 + ridge)
    t_model = tw  # the step that whitened model predicts (½ without a ridge)

    def ridge_terms(s: np.ndarray) -> tuple[float, np.ndarray]:
        """``(β/2)·tr(C Δ C Δ)`` and its gradient ``β·C Δ C`` with ``Δ = Σ - target``."""
        cdc = second @ (s - tgt) @ second
        return 0.5 * ridge * float(np.sum(cdc * (s - tgt))), ridge * cdc

    def objective(d: np.ndarray, s: np.ndarray | None = None) -> float:
        f = -blocks.loglik(d)
        if alpha > 0.0:
            f += alpha * float(np.mean(d))
        if ridge > 0.0:
            f += ridge_terms(s)[0]
        return f

    s_cur = sigma0
    d_cur = quad_forms(z, s_cur) if d0 is None else d0
    f_cur = objective(d_cur, s_cur)
    s_prev, d_prev = s_cur, d_cur
    theta, t = 1.0, t_model
    refresh = _refresh_iterations(max_iter)
    metric: _Metric | None = None
    cache: dict = {}
    small_steps, pgn, converged, it = 0, np.inf, False, 0
    for it in range(1, max_iter + 1):
        if (it - 1) in refresh:
            h = blocks.curvature(d_cur)
            h = np.minimum(h, np.quantile(h, 0.99), out=h)
            metric = _Metric(weighted_gram(z, h) / n)
            cache = {}
            t_ref = t_model if it > 1 or not t0 or not np.isfinite(t0) else float(t0)
            theta, s_prev, d_prev, t = 1.0, s_cur, d_cur, t_ref
        theta_next = (1.0 + np.sqrt(1.0 + 4.0 * theta * theta)) / 2.0
        mom = (theta - 1.0) / theta_next
        s_y = s_cur + mom * (s_cur - s_prev)
        d_y = d_cur + mom * (d_cur - d_prev)
        ll_y, slope = blocks.loglik_and_slope(d_y)
        f_y = -ll_y
        grad = -weighted_gram(z, slope, blocks) / n
        if alpha > 0.0:
            f_y += alpha * float(np.mean(d_y))
            grad += alpha * second
        if ridge > 0.0:
            rv, rg = ridge_terms(s_y)
            f_y += rv
            grad += rg
        g_m = metric.grad_to_m(grad)
        m_y = metric.to_m(s_y)
        trial = _TrialPoints(z, metric, m_y, d_y, _precondition(g_m, tw), cache, cap)
        trial.tw = tw
        t_start = t
        t *= 1.25
        trials = 0
        while True:
            trials += 1
            m_new, d_new = trial(t)
            delta = m_new - m_y
            f_new = objective(d_new, metric.to_sigma(m_new) if ridge > 0.0 else None)
            bound = f_y + float(np.sum(g_m * delta)) + _h_norm2(delta, tw) / (2.0 * t)
            if f_new <= bound + 1e-12 * max(1.0, abs(f_y)) or t < 1e-14:
                break
            if mom > 0.0 and trials >= 6:  # the extrapolated point is a poor base: restart
                f_new = np.inf
                break
            t *= 0.5
        pgn = np.sqrt(_h_norm2(delta, tw)) / t if np.isfinite(f_new) else pgn
        if callback is not None:
            callback(it, f_new, trials, t)
        if f_new > f_cur:  # function-value restart: reject, reset momentum and step
            theta, s_prev, d_prev, t = 1.0, s_cur, d_cur, t_start
            if mom == 0.0:  # a plain gradient step cannot decrease F: stalled at noise level
                converged = f_new - f_cur <= 1e-10 * max(1.0, abs(f_cur))
                break
            continue
        decrease = f_cur - f_new
        # Next step: grow by 1.25, or up to 10× when the local curvature along this step allows.
        curv = 2.0 * (f_new - f_y - float(np.sum(g_m * delta))) / max(_h_norm2(delta, tw), 1e-300)
        t_fit = 0.9 / curv if curv > 0 else 10.0 * t
        t = max(t, min(10.0 * t, t_fit)) / 1.25  # the loop multiplies by 1.25 first
        s_prev, d_prev = s_cur, d_cur
        s_cur, d_cur, f_cur = metric.to_sigma(m_new), d_new, f_new
        theta = theta_next
        small_steps = small_steps + 1 if decrease <= tol else 0
        if small_steps >= 2 and max(t, t_model) * pgn * pgn / 2.0 <= tol:
            converged = True
            break
    return SolverResult(
        sigma=s_cur,
        objective=f_cur,
        n_iter=it,
        converged=converged,
        projected_gradient_norm=float(pgn),
        step=float(t),
    )
