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
``kfold_validation``; or the caller's ``validation``), starting from a James–Stein-type
estimate ``β₀ = 10 · 2·noise / (signal - noise)`` (``signal``: the Newton decrement of the
likelihood at the prior; ``noise = p/(2·n_train)``, ``p = r(r+1)/2``; see
``_explore_start.start_strength``), never below the floor ``β = 1/n``; path fits use tol 1e-3
and at most 60 iterations (a fold fit of the one-split ray at most ``RAY_MAX_ITER``: it only
places the ray; the ray's first-order condition holds for any base point inside the cone).

* Several folds (small data, fits are cheap): a path ``β₀·10^{±k}``, each fit warm-started from
  the previous one (or the prior when the penalty grows, whichever is better), walking in the
  improving direction until the held-out gain falls below 1e-5.
* One split (large data): a fit ``S₀`` at ``β₀`` on the training part, then the *ray*
  ``Π + s·(S₀ - Π)``: distances are linear in ``s``, so the validation log-likelihood along it
  is concave in one variable and its maximiser ``s_v`` is found by bisection (O(n) per step);
  ``β̂`` is the penalty whose training optimum restricted to the ray lies at ``s_v`` (the ray's
  first-order condition ``ℓ_T'(s_v) = β̂·s_v·tr(WΔ₀WΔ₀)``, ``Δ₀ = S₀ - Π``: closed form). For a
  quadratic likelihood with the whitened Hessian the penalised path *is* this ray (shrinkage
  toward Π by ``(2+β₀)/(2+β)``). When ``β̂`` lands > 3× from the fitted penalty the training
  part is refitted at ``β̂`` (from the ray's point) and the ray read again (at most 4 fits);
  held-out figures: the ray's point ``Π + s_v·Δ₀``. When the ray leaves the PSD cone with the
  validation likelihood still rising (a fit on the cone's boundary: a low-rank truth, issue
  35's Adult pairs), ``β̂`` is read at a constraint and means nothing: the decade path is
  walked on the split instead (one-standard-error choice).

When ``n_train ≥ 50 · r(r+1)/2`` (n ≫ d²) the search is skipped and ``β = 1/n`` (≈ the MLE).
The final fit uses all pairs at the chosen ``β`` (``alpha_``; ``alpha_path_``: (β, held-out
loglik) tried), started from the validation fit or the prior, whichever is better (``refit=
False``: none, ``sigma_`` is the validation fit). A float ``alpha`` fixes ``β`` (0: the MLE).

Held-out likelihood. ``heldout_loglik_``: the mean per-pair log-likelihood of the validation
pairs under the fits that did not see them, at the chosen ``β``; ``heldout_loglik_ci_``: 95 %
(± 1.96 standard errors: the pairs', and over several folds the fold fits' own spread as a random
effect, ``_pairloss.weighted_mean_ci``); ``heldout_n_``; ``heldout_distances_`` per validation
pair (NaN if never held out). It estimates how a fit on ~80 % of the data generalises.

Safeguards. ``max_eigenvalue`` (default None) is an optional hard bound on the fitted part's
spectrum (``"auto"`` = the former ``100·d / mean‖z‖²``). ``bound_active_`` is True, with a
readable line in ``warnings_``, when a bound binds or when the data (nearly) separate the labels:
with ``alpha="auto"`` when the chosen ``β`` is the floor and the top whitened eigenvalue
(``C^{1/2} S C^{1/2}``: the typical pair distance along the top direction) still grows by more
than 5 % from the previous ``β`` on the path; with a fixed ``alpha`` when that eigenvalue exceeds
10. ``warnings_`` also says when the differences span fewer than ``d`` directions and when the
solver did not converge. Below ``MIN_ANSWERS = 20`` answers, or with one label missing, ``fit``
raises ``ValueError``; ``explore_shortfall(y)`` says what is missing.

Solver: preconditioned FISTA (``_explore_solver``; preconditioner from a floored
eigendecomposition). The unpenalised fit starts from the best of ``c·I`` and ``c·C⁻¹``; a
penalised fit from the candidate with the better objective: the prior, the validation fit, a
refit's ``warm_start``. Stop: two steps each gaining ≤ ``tol`` (1e-4; 1e-3 on the path) and a
further projected-gradient step promising ≤ ``tol``. ``precision="mixed"``: n×d products in
float32, ``loglik_`` in float64; ``"double"``: float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from ._explore_path import choose_alpha
from ._explore_problem import Differences, FitLoglik, Problem, fit_warnings, second_moment
from ._explore_solver import SolverResult
from ._explore_start import ExploreWarm, final_start, fold_priors, resolve_prior, warm_in
from ._pairloss import pair_loglik, quad_forms, row_norms
from ._validation import N_FOLDS as N_FOLDS
from ._validation import (
    check_explore_params,
    check_labels,
    check_pairs,
    check_validation,
    check_weights,
    differences,
    stratified_folds,
)
from .psd import projector, symmetrize

__all__ = [
    "Differences",
    "EXPLORE",
    "ExploreWarm",
    "ExploreShortfall",
    "explore_shortfall",
    "kfold_validation",
    "pair_loglik",
]

AUTO_CAP_FACTOR = 100.0
MIN_ANSWERS = 20  # explore_shortfall: answers needed, with both labels present
KFOLD_BELOW = 2000  # below this many pairs: N_FOLDS-fold validation (``kfold_validation``)
KFOLD_MAX_WORK = 500_000  # ... and while pairs × dimension stays at most this; else one split
# The penalty search's constants (path, floor, rays) live with it in ``_explore_path``.


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
        needs = ((self.need_comparable, "comparable"), (self.need_incomparable, "incomparable"))
        needs += ((self.need_any, "more of either kind"),)
        parts = [f"{n} {what}" for n, what in needs if n]
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


class EXPLORE(FitLoglik):
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
    warm_start : ExploreWarm, optional
        A previous fit's ``warm_state_`` (a refit of almost the same data): one more start
        candidate for each fold fit and the final fit; the stopping rule is unchanged.
    refit : bool
        False: with a penalty search, no final fit on all pairs (``sigma_`` = validation fit).

    Attributes
    ----------
    sigma_, loglik_ (mean log-likelihood of ``sigma_`` on all pairs), n_iter_, converged_,
    projected_gradient_norm_, max_eigenvalue_, n_features_in_; and ``alpha_``, ``alpha_path_``
    (tuple of (alpha, held-out loglik) tried), ``heldout_loglik_``, ``heldout_loglik_ci_``
    (95 % interval), ``heldout_n_``, ``heldout_distances_`` (per pair: distance under the fit
    that did not see it, NaN if never held out), ``n_constrained_`` (dimension of the span of the
    differences), ``prior_`` (resolved prior), ``prior_scale_``, ``bound_active_``,
    ``warnings_`` (readable strings), ``warm_state_`` (an ``ExploreWarm`` for the next refit).
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
        warm_start: ExploreWarm | None = None,
        refit: bool = True,
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
        self.warm_start, self.refit = warm_start, refit

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
        validation_priors: list | None = None,
    ) -> EXPLORE:
        """Fit on ``Z[i] = φ(x_i1) - φ(x_i2)`` (array, ``PairDifferences`` or kept ``Differences``);
        keywords: ``fit``; ``validation_priors``: one per fold (``_explore_start.fold_priors``)."""
        data = Z if isinstance(Z, Differences) else None  # checked, sq and ZᵀZ known
        z = data.z if data is not None else check_pairs(Z)  # an array, or PairDifferences
        lab = check_labels(y, z.shape[0])
        check_explore_params(self)
        wts = check_weights(sample_weight, z.shape[0])
        if validation is not None:  # as (train rows, validation rows) pairs
            validation = check_validation(validation, lab, wts, explore_shortfall)
        n, d = z.shape
        sq = data.sq if data is not None else row_norms(z)
        if not np.any(sq > 0):
            raise ValueError("all difference vectors are zero; Sigma is not identifiable")
        short = explore_shortfall(lab[wts > 0])
        if not short.ok:
            raise ValueError(
                short.message + " (among pairs of weight > 0)" * (sample_weight is not None)
            )
        notes: list[str] = []
        cap = self._resolve_cap(sq, d)
        second = data.second() if data is not None else second_moment(z)
        prior, scale = resolve_prior(self.prior, self.prior_scale, z, lab, wts, d, notes, sq)
        full = Problem(data or z, lab, prior, second, self.precision, weights=wts, sq=sq)
        choice = None  # the penalty search and held-out figures: with "auto", or when asked for
        if self.alpha == "auto" or self.validate or validation is not None:
            kfold = kfold_validation(n, d)  # for EXPLORE's own folds
            folds = stratified_folds(lab, kfold) if validation is None else validation
            keys = ("precision", "tol", "max_iter", "init", "random_state")
            settings = {key: getattr(self, key) for key in keys}
            settings["fixed"] = None if self.alpha == "auto" else float(self.alpha)
            settings["warm_folds"] = getattr(self.warm_start, "folds", None)
            data = (z, lab, wts, sq)
            settings["fold_priors"] = fold_priors(validation_priors, validation, folds, self, data)
            choice = choose_alpha(z, lab, wts, second, full, folds, cap, **settings)
            full.restore()
        beta = choice.beta if self.alpha == "auto" else float(self.alpha)
        if self.refit or choice is None:
            warm = (None, None) if choice is None else (choice.start, choice.warm_distances)
            previous = warm_in(full, getattr(self.warm_start, "sigma", None), cap)
            start, d0 = final_start(full, beta, cap, *warm, self.init, self.random_state, previous)
            t0 = None if choice is None else choice.path_step
            res = full.solve(beta, start, cap, float(self.tol), int(self.max_iter), t0=t0, d0=d0)
        else:  # the validation fit, as it is
            res = SolverResult(choice.start, np.nan, 0, True, np.nan)
        w, v = np.linalg.eigh(symmetrize(res.sigma))
        s_span = symmetrize((v * np.clip(w, 0.0, cap)) @ v.T)
        sigma = full.full(s_span)
        self.warm_state_ = ExploreWarm(sigma, None if choice is None else choice.fold_fits)
        if self.sensitive_directions is not None:
            keep = np.eye(d) - projector(self.sensitive_directions, d)
            sigma = symmetrize(keep @ sigma @ keep)
        self.sigma_ = sigma
        self._set_loglik(Z, z, sigma, lab, wts)  # read when first asked for on ``Differences``
        self.n_iter_, self.converged_ = res.n_iter, res.converged
        self.projected_gradient_norm_ = res.projected_gradient_norm
        self.max_eigenvalue_, self.n_features_in_ = cap, d
        self.n_constrained_ = full.r
        self.prior_, self.prior_scale_ = prior, scale
        self.alpha_ = beta
        self.alpha_path_ = () if choice is None else tuple(choice.path)
        heldout = (np.nan, (np.nan, np.nan), 0) if choice is None else choice.heldout
        self.heldout_loglik_, self.heldout_loglik_ci_, self.heldout_n_ = heldout
        self.heldout_baselines_ = {} if choice is None else choice.gains
        self.heldout_distances_ = np.full(n, np.nan) if choice is None else choice.heldout_distances
        path_says = (choice is not None and choice.separated) if self.alpha == "auto" else None
        self.bound_active_ = fit_warnings(
            full, s_span, w, cap, beta, path_says, res.converged, res.n_iter, notes
        )
        self.warnings_ = notes
        return self

    def _resolve_cap(self, sq: np.ndarray, d: int) -> float:
        cap = self.max_eigenvalue
        auto = cap == "auto"
        return np.inf if cap is None else float(AUTO_CAP_FACTOR * d / np.mean(sq) if auto else cap)

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
