"""Drift between two fair metrics Σ₁ → Σ₂ (e.g. consecutive metric versions).

* ``operator_norm = ‖Σ₂ - Σ₁‖_op`` (largest |eigenvalue| of the difference) and
  ``frobenius_norm = ‖Σ₂ - Σ₁‖_F``; ``relative_operator_norm`` divides by ``max(‖Σ₁‖_op, tiny)``.
* Sensitive subspaces: the span of the eigenvectors of the ``k`` smallest eigenvalues of each Σ
  (the directions the metric ignores). ``k`` is ``sensitive_dim`` when given; otherwise it is
  inferred per matrix: for an orthogonal projector (eigenvalues ≈ 0 or 1, as FACE's ``I - QQᵀ``)
  it is the number of eigenvalues below ½; else the position of the largest relative gap of the
  ascending spectrum, ``k = argmax_i (μ_{i+1} + ε) / (μ_i + ε)`` with ``ε = 1e-2 · mean μ``,
  accepted only when that ratio is at least ``GAP_MIN = 10`` (else ``k = 0``: no sensitive
  subspace is detectable). The floor ``ε`` makes the rule ignore eigenvalues at (or near)
  numerical zero: ratios among eigenvalues far below the typical one (estimation noise, PSD
  clipping) are damped to about 1, so two fits of one truth pick the same gap — the one between
  the ignored directions and the rest. For comparing versions of one study, pass an explicit
  ``sensitive_dim`` (e.g. the published version's) and both sides use it. ``dim_rules`` says
  which rule gave each side's dimension ("given", "projector", "gap" or "none").
* ``principal_angles``: between the two sensitive subspaces (``scipy.linalg.subspace_angles``,
  radians, descending), and ``subspace_distance = ‖P₁ - P₂‖_op`` of their orthogonal
  projectors, which is the sine of the largest principal angle when the dimensions agree (1
  when they differ). When both Σ are projectors, ``subspace_distance = operator_norm``.

Whether a change means something (:func:`answers_fit_change`) is judged on the answers, not on
Σ's scale (which the feature map sets): how well an older EXPLORE Σ predicts the answers that
came after it — mean per-answer log-likelihood under EXPLORE's model, a figure it never saw —
against what its own held-out pairs promised (its held-out log-likelihood and 95 % interval).
``z = (ℓ_new − ℓ_heldout) / √(se_new² + se_heldout²)``; strongly negative ``z`` says the new
answers follow another rule than the one the older version learned. Sampling noise (the few new
answers, the older version's few held-out pairs) is in the standard errors, so a small young
study needs a larger fall than a large one. ``z_constant`` compares the same answers, paired,
with guessing their own comparable rate: a version whose held-out figure flattered it (few
answers; issue 25) falls short of its promise on any later answers, but a version that learned
the annotators' rule does not predict their later answers worse than guessing unless the rule
changed.
``z_gain``, the sharper test the app flags by: the later answers' gain over guessing the older
version's comparable rate, paired answer by answer, against the gain its held-out pairs promised
over the same constant, ``(g_new − g_heldout) / √(se_new² + se_heldout²)``. The answers' label
mix (how hard they are to guess) cancels. A version that learned a rule promises a gain; answers
that follow another rule lose it, though they need not score worse than guessing (an unrelated
rule leaves them near the constant, where ``z_constant`` has no power).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import subspace_angles
from scipy.special import expit

from ._pairloss import pair_loglik, psd_quad_forms
from .psd import symmetrize, validate_sigma

__all__ = [
    "AnswersFit",
    "DriftResult",
    "answer_gains",
    "answer_probability",
    "answer_surprises",
    "answers_fit_change",
    "cluster_mean_se",
    "drift",
    "gain_shortfall",
    "heldout_promise",
    "infer_sensitive_dim",
    "sensitive_subspace",
    "spent_alpha",
]


@dataclass(frozen=True)
class DriftResult:
    operator_norm: float
    frobenius_norm: float
    relative_operator_norm: float
    principal_angles: np.ndarray  # read-only, radians, descending
    subspace_distance: float
    sensitive_dims: tuple[int, int]
    projectors: bool
    dim_rules: tuple[str, str] = ("gap", "gap")


def _is_projector(w: np.ndarray, atol: float = 1e-6) -> bool:
    return bool(np.all(np.minimum(np.abs(w), np.abs(w - 1.0)) <= atol))


GAP_FLOOR = 1e-2  # ε = GAP_FLOOR · mean eigenvalue
GAP_MIN = 10.0  # a gap must be at least this ratio to define the sensitive dimension


def infer_sensitive_dim(w: ArrayLike) -> tuple[int, str]:
    """``(k, rule)`` for a spectrum (any order): the module docstring's dimension rule."""
    w = np.sort(np.clip(np.asarray(w, dtype=np.float64), 0.0, None))
    if w.size <= 1:
        return 0, "none"
    if _is_projector(w):
        return int(np.sum(w < 0.5)), "projector"
    eps = GAP_FLOOR * max(float(w.mean()), np.finfo(float).tiny)
    ratios = (w[1:] + eps) / (w[:-1] + eps)
    k = int(np.argmax(ratios))
    if ratios[k] < GAP_MIN:
        return 0, "none"
    return k + 1, "gap"


def _infer_dim(w: np.ndarray) -> int:
    return infer_sensitive_dim(w)[0]


def _subspace(s: np.ndarray, dim: int | None) -> tuple[np.ndarray, str]:
    w, v = np.linalg.eigh(s)
    k, rule = infer_sensitive_dim(w) if dim is None else (int(dim), "given")
    if not 0 <= k <= s.shape[0]:
        raise ValueError(f"sensitive_dim must lie in [0, {s.shape[0]}], got {dim}")
    return v[:, :k], rule


def sensitive_subspace(sigma: ArrayLike, dim: int | None = None) -> np.ndarray:
    """Orthonormal basis (d × k columns) of the span of the k smallest-eigenvalue eigenvectors."""
    return _subspace(validate_sigma(sigma), dim)[0]


def drift(
    sigma_old: ArrayLike, sigma_new: ArrayLike, sensitive_dim: int | None = None
) -> DriftResult:
    """Compare two PSD matrices of the same size (see the module docstring)."""
    s1, s2 = (
        validate_sigma(sigma_old, name="sigma_old"),
        validate_sigma(sigma_new, name="sigma_new"),
    )
    if s1.shape != s2.shape:
        raise ValueError(f"sigma_old and sigma_new differ in shape: {s1.shape} vs {s2.shape}")
    diff = symmetrize(s2 - s1)
    op = float(np.abs(np.linalg.eigvalsh(diff)).max(initial=0.0))
    fro = float(np.linalg.norm(diff))
    top = float(np.abs(np.linalg.eigvalsh(s1)).max(initial=0.0))
    w1, w2 = np.linalg.eigvalsh(s1), np.linalg.eigvalsh(s2)
    (u1, rule1), (u2, rule2) = _subspace(s1, sensitive_dim), _subspace(s2, sensitive_dim)
    if u1.shape[1] and u2.shape[1]:
        angles = np.clip(subspace_angles(u1, u2), 0.0, np.pi / 2)
    else:
        angles = np.zeros(0)
    p_diff = u1 @ u1.T - u2 @ u2.T
    dist = float(np.abs(np.linalg.eigvalsh(symmetrize(p_diff))).max(initial=0.0))
    angles = np.array(angles, dtype=np.float64)
    angles.flags.writeable = False
    return DriftResult(
        operator_norm=op,
        frobenius_norm=fro,
        relative_operator_norm=op / max(top, np.finfo(float).tiny),
        principal_angles=angles,
        subspace_distance=min(dist, 1.0),
        sensitive_dims=(int(u1.shape[1]), int(u2.shape[1])),
        projectors=_is_projector(w1) and _is_projector(w2),
        dim_rules=(rule1, rule2),
    )


@dataclass(frozen=True)
class AnswersFit:
    """How an older Σ predicts later answers, against its own held-out figure."""

    answers: int
    loglik: float  # mean per-answer log-likelihood of the later answers under the older Σ
    expected: float  # the older version's held-out log-likelihood
    z: float  # (loglik - expected) / combined standard error; negative: worse than promised
    constant: float = 0.0  # the same answers' mean log-likelihood under their own comparable rate
    z_constant: float = 0.0  # (loglik - constant) / its paired standard error; < 0: worse
    gain: float | None = None  # mean gain per answer over guessing the older version's rate
    promised_gain: float | None = None  # the older version's held-out gain over its constant
    z_gain: float | None = None  # (gain - promised_gain) / combined standard error


def answers_fit_change(
    sigma: ArrayLike,
    differences: ArrayLike,
    y: ArrayLike,
    expected: float,
    expected_ci: tuple[float, float],
    flip_rate: float = 0.0,
    promised: tuple[float, tuple[float, float], float] | None = None,
) -> AnswersFit:
    """The module docstring's ``z`` for the later answers (``differences`` = x_a − x_b rows,
    ``y`` in [0, 1]) under ``sigma``, against the held-out figure ``expected`` and its 95 %
    interval. Needs at least two answers.

    ``flip_rate`` e: a Σ fitted jointly with the annotators' flip rates (``reliability.py``)
    predicts the true label, so an observed answer is scored under
    ``P(y = 1) = e + (1 − 2e)·2σ(−zᵀΣz)``, as that fit modelled it; 0: EXPLORE's own model.

    ``promised``: the older version's held-out gain over the constant prediction, its 95 %
    interval, and the comparable rate that constant predicted (its training answers'). Then
    ``z_gain`` compares the later answers' gain over that same rate, paired answer by answer,
    with the promise (module docstring)."""
    z_rows = np.asarray(differences, dtype=np.float64)
    labels = np.asarray(y, dtype=np.float64)
    if labels.size < 2:
        raise ValueError("at least two answers are needed")
    d = psd_quad_forms(z_rows, validate_sigma(sigma))
    if flip_rate > 0:
        p = flip_rate + (1 - 2 * flip_rate) * 2 * expit(-d)
        values = labels * np.log(p) + (1 - labels) * np.log1p(-p)
    else:
        values = pair_loglik(d, labels)
    mean = float(values.mean())
    se_new = float(values.std(ddof=1)) / np.sqrt(values.size)
    low, high = (float(v) for v in expected_ci)
    se_old = (high - low) / (2 * 1.959964) if np.isfinite(high - low) else np.inf
    spread = float(np.hypot(se_new, se_old))
    z = (mean - float(expected)) / spread if spread > 0 else 0.0
    # Against guessing: the later answers' own comparable rate, paired answer by answer.
    rate = float(np.clip(labels.mean(), 0.5 / labels.size, 1 - 0.5 / labels.size))
    gain = values - (labels * np.log(rate) + (1 - labels) * np.log1p(-rate))
    se_gain = float(gain.std(ddof=1)) / np.sqrt(gain.size)
    z_constant = float(gain.mean()) / se_gain if se_gain > 0 else 0.0
    found = AnswersFit(
        answers=int(values.size),
        loglik=mean,
        expected=float(expected),
        z=z,
        constant=mean - float(gain.mean()),
        z_constant=z_constant,
    )
    if promised is None:
        return found
    promise, (low, high), old_rate = float(promised[0]), promised[1], float(promised[2])
    old_rate = float(np.clip(old_rate, 1e-6, 1 - 1e-6))
    gain = values - (labels * np.log(old_rate) + (1 - labels) * np.log1p(-old_rate))
    se_old = (float(high) - float(low)) / (2 * 1.959964)
    spread = float(np.hypot(gain.std(ddof=1) / np.sqrt(gain.size), se_old))
    z_gain = (float(gain.mean()) - promise) / spread if spread > 0 else 0.0
    return replace(found, gain=float(gain.mean()), promised_gain=promise, z_gain=float(z_gain))


# ---- The drift flag's statistics (learning/versions/drift.py: drift_check) -------------------
#
# The flag compares the gain over a constant prediction of the answers that came after a version
# with the gain its held-out answers promised, both on pairs drawn uniformly at random (the
# sampler's control pairs), both scored by the Σ the version stores. A pair's repeated answers
# share the pair (and its true label): they are one cluster for every standard error here.


def cluster_mean_se(values: ArrayLike, clusters: ArrayLike) -> tuple[float, float]:
    """The mean of ``values`` and its cluster-robust standard error, clusters by ``clusters``
    (one code per value; a pair's answers are one cluster):
    ``se² = G/(G−1) · Σ_c (Σ_{i∈c} (v_i − v̄))² / n²`` (G clusters, n values). With every value
    its own cluster this is the usual ``s/√n``. Infinite with fewer than two clusters."""
    v = np.asarray(values, dtype=np.float64)
    codes = np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    if v.size == 0:
        return float("nan"), float("inf")
    mean = float(v.mean())
    sums = np.bincount(codes, weights=v - mean)
    g = int(np.count_nonzero(np.bincount(codes)))
    if g < 2:
        return mean, float("inf")
    return mean, float(np.sqrt(g / (g - 1) * np.sum(sums * sums)) / v.size)


def answer_gains(d: ArrayLike, y: ArrayLike, rate: float, flip_rate: float = 0.0) -> np.ndarray:
    """Per answer: log-likelihood under the metric (squared distances ``d``) minus that of
    guessing the comparable ``rate``. ``flip_rate`` e > 0: the metric predicts the true label
    and the answer flips it with probability e, ``P(y = 1) = e + (1 − 2e)·2σ(−d)``, as a
    reliability-weighted fit models its answers."""
    d = np.asarray(d, dtype=np.float64)
    labels = np.asarray(y, dtype=np.float64)
    if flip_rate > 0:
        p = flip_rate + (1 - 2 * flip_rate) * 2 * expit(-d)
        values = labels * np.log(p) + (1 - labels) * np.log1p(-p)
    else:
        values = pair_loglik(d, labels)
    rate = float(np.clip(rate, 1e-6, 1 - 1e-6))
    return values - (labels * np.log(rate) + (1 - labels) * np.log1p(-rate))


def answer_probability(d: ArrayLike, flip_rate: float = 0.0) -> np.ndarray:
    """The metric's ``P(y = 1)`` of answers at squared distances ``d``: ``2σ(−d)``, or with a
    flip rate ``e`` (a reliability-weighted fit) ``e + (1 − 2e)·2σ(−d)``; within [1e-6, 1 − 1e-6]."""
    p = 2 * expit(-np.asarray(d, dtype=np.float64))
    if flip_rate > 0:
        p = flip_rate + (1 - 2 * flip_rate) * p
    return np.clip(p, 1e-6, 1 - 1e-6)


def answer_surprises(
    d: ArrayLike,
    y: ArrayLike,
    rate: float,
    flip_rate: float = 0.0,
) -> np.ndarray:
    """Per answer: how much worse than expected the metric predicted it, ``(y − p)·(logit p −
    logit rate)`` — its gain over guessing ``rate`` minus the gain it would have on average if
    its answers followed the metric's probability ``p`` (:func:`answer_probability`). Given the
    pair, its mean is 0 for answers that follow ``p``, whichever pairs were asked; but a sampler
    that picks pairs by a metric's errors picks where ``p`` is off, and on such pairs its mean
    is below 0 though the rule never changed (``benchmarks/drift.py``: the "all answers" test,
    not the flag)."""
    p = answer_probability(d, flip_rate)
    rate = float(np.clip(rate, 1e-6, 1 - 1e-6))
    spread = np.log(p) - np.log1p(-p) - np.log(rate) + np.log1p(-rate)
    return (np.asarray(y, dtype=np.float64) - p) * spread


def heldout_promise(
    gains: ArrayLike, clusters: ArrayLike, folds: ArrayLike | None = None
) -> tuple[float, float]:
    """The promise: the mean held-out gain and its standard error, clusters by pair, plus the
    spread of the fold fits when ``folds`` (one fold id per gain) holds several: each fold's
    fit is a random effect, ``τ² = max(0, var(m_k) − mean(se_k²))`` added as ``τ²/K`` (as
    EXPLORE's own held-out interval, ``_pairloss.weighted_mean_ci``), because the flag scores
    one fit, the stored one, whose gain varies with its training answers."""
    g = np.asarray(gains, dtype=np.float64)
    c = np.asarray(clusters)
    mean, se = cluster_mean_se(g, c)
    if folds is None or not np.isfinite(se):
        return mean, se
    f = np.asarray(folds)
    parts = [cluster_mean_se(g[f == k], c[f == k]) for k in np.unique(f)]
    parts = [(m, s) for m, s in parts if np.isfinite(s)]
    if len(parts) > 1:
        means, own = np.array([m for m, _ in parts]), np.array([s * s for _, s in parts])
        tau2 = max(0.0, float(np.var(means, ddof=1) - own.mean()))
        se = float(np.sqrt(se * se + tau2 / len(parts)))
    return mean, se


def gain_shortfall(
    gains: ArrayLike, clusters: ArrayLike, promise: float, promise_se: float
) -> tuple[float, float, float]:
    """``(gain, se, z)``: the later answers' mean gain with its cluster-robust standard error,
    and ``z = (gain − promise) / √(se² + promise_se²)`` (negative: short of the promise)."""
    gain, se = cluster_mean_se(gains, clusters)
    spread = float(np.hypot(se, promise_se))
    z = (gain - float(promise)) / spread if np.isfinite(spread) and spread > 0 else 0.0
    return gain, se, float(z)


SPEND_HALF = 2000  # answers by which half of a study's false-alarm budget is spent


def spent_alpha(rate: float, answers: float, half: float = SPEND_HALF) -> float:
    """The share of a study's false-alarm budget ``rate`` spent by its first ``answers``
    answers: ``rate · n / (n + half)``, which never reaches ``rate``. A check made when the study
    had ``n₁`` answers, after the previous check at ``n₀``, may use
    ``spent_alpha(n₁) − spent_alpha(n₀)``: the checks' levels sum to less than ``rate`` over the
    study's whole life, so by the union bound the chance that a study whose annotators never
    change their rule is ever flagged is at most ``rate`` (whatever the correlation between the
    checks, which share answers)."""
    n = max(float(answers), 0.0)
    return float(rate) * n / (n + float(half))
