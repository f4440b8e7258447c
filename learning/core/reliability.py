"""EXPLORE with annotators weighted by reliability: a one-coin (flip-rate) model fitted by EM.

Each annotator ``a`` reports the true label with probability ``1 - e_a`` and flips it with
probability ``e_a`` (Dawid–Skene with one coin per annotator; a careless annotator who answers at
random has ``e_a = 1/2``). With EXPLORE's response model ``p = 2σ(-zᵀΣz)`` for the true label,

    P(y_obs = 1) = (1 - e_a)·p + e_a·(1 - p).

A pair has one true label (drawn from ``p``); its answers are independent given it. EM on the
latent true labels:

* **E-step** — the posterior ``w_j = P(true = 1 | all answers to pair j, Σ, e)``: prior log-odds
  ``log p/(1 - p)`` plus ``± log((1 - e_a)/e_a)`` per answer (gold pairs: the known truth;
  "unsure" answers say nothing);
* **M-step** — EXPLORE on one observation per pair with the **soft label** ``w_j`` (its expected
  log-likelihood, which EXPLORE accepts for ``y ∈ [0, 1]``), the penalty fixed at the first
  (plain, every answer counted) fit's choice; and ``e_a`` as the
  posterior mean under a Beta(a, b) prior of the expected number of flips among the annotator's
  answers, kept in [0, 1/2] (above 1/2 the labels would be swapped, which the model excludes).

The Beta prior shrinks annotators with few answers to the prior mean; overlap (pairs answered by
several people) and gold answers (known truth) are what separate ``e_a`` from Σ. The interval of
``e_a`` is the Beta posterior's (given the final Σ; it ignores Σ's own uncertainty): equal
tails, or from 0 when the posterior's density is highest there.

A refit of almost the same answers may pass the previous fit's ``warm_state_``
(:class:`ReliabilityWarm`): the EM then starts from its flip rates and Σ, and every M-step's
EXPLORE starts from the previous M-step's Σ (one more start candidate; same stopping rule), so
that a few new answers cost one or two cheap M-steps instead of several fits from the prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit
from scipy.stats import beta as beta_distribution

from ._pairloss import quad_forms
from .explore import EXPLORE, Differences, ExploreWarm

_EPS = 1e-9


def distances(zp, sigma: np.ndarray, params: dict) -> np.ndarray:
    """The pairs' distances under ``sigma``: in float64 over an array; over ``Differences`` in
    the M-step's precision, remembered there (the M-step's warm start is this ``sigma``)."""
    if not isinstance(zp, Differences):
        return quad_forms(zp, sigma)
    mixed = params.get("precision", "mixed") == "mixed"
    return zp.distances(sigma, np.float32 if mixed else np.float64)


@dataclass(frozen=True)
class Reliability:
    """Per annotator: its code, answers counted, flip rate and its interval."""

    annotator: np.ndarray  # the codes passed to fit, ascending
    n_answers: np.ndarray  # answers that inform e (not "unsure")
    flip_rate: np.ndarray
    interval: np.ndarray  # (k, 2)


@dataclass(frozen=True, eq=False)
class ReliabilityWarm:
    """Where the next EM may start: flip rates per annotator code and the final Σ (d × d)."""

    annotator: np.ndarray
    flip_rate: np.ndarray
    sigma: np.ndarray


def _codes(annotator: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(annotator, return_inverse=True)``; for integer codes in a small range by a
    count and a lookup (O(n), no sort of the n answers at every refit)."""
    if annotator.ndim == 1 and annotator.size and annotator.dtype.kind in "iu":
        low, high = int(annotator.min()), int(annotator.max())
        if high - low <= 4 * annotator.size:
            seen = np.bincount(annotator - low, minlength=high - low + 1) > 0
            lookup = np.cumsum(seen) - 1
            return (np.flatnonzero(seen) + low).astype(annotator.dtype), lookup[annotator - low]
    codes, who = np.unique(annotator, return_inverse=True)
    return codes, who.ravel()


class ReliableEXPLORE:
    """EXPLORE jointly with each annotator's flip rate (EM; see the module's docstring).

    Parameters
    ----------
    prior : (a, b) of the Beta prior on a flip rate (default (1, 9): mean 0.1, worth 10 answers).
    max_iter, tol : EM iterations and the stopping change of the flip rates.
    level : coverage of the flip-rate intervals.
    explore_params : keyword arguments of :class:`EXPLORE` (its ``prior``, ``max_eigenvalue``...).

    Attributes
    ----------
    sigma_, explore_ (the final EXPLORE fit), plain_ (the unweighted first fit), reliability_
    (:class:`Reliability`), soft_labels_, n_iter_, converged_, warm_state_
    (:class:`ReliabilityWarm`, for the next refit).
    """

    def __init__(
        self,
        *,
        prior: tuple[float, float] = (1.0, 9.0),
        max_iter: int = 10,
        tol: float = 5e-3,
        level: float = 0.95,
        explore_params: dict | None = None,
    ) -> None:
        self.prior = prior
        self.max_iter = max_iter
        self.tol = tol
        self.level = level
        self.explore_params = explore_params

    def fit_differences(
        self,
        Z: ArrayLike,
        y: ArrayLike,
        annotator: ArrayLike,
        pair: ArrayLike | None = None,
        gold: ArrayLike | None = None,
        plain: EXPLORE | None = None,
        warm: ReliabilityWarm | None = None,
    ) -> ReliableEXPLORE:
        """Fit on answers: differences ``Z`` with observed labels ``y`` (1, 0 or 1/2 for unsure)
        by ``annotator`` (integer codes). ``pair``: codes of the distinct pairs (answers to one
        pair share its true label; default: every answer its own pair). ``gold``: the known true
        label per answer, NaN where none. ``plain``: an EXPLORE already fitted on these answers
        (unweighted), reused as the start and for its penalty. ``warm``: a previous fit's
        ``warm_state_`` (module docstring)."""
        a0, b0 = (float(v) for v in self.prior)
        if not (a0 > 0 and b0 > 0):
            raise ValueError("prior must be two positive numbers (a, b)")
        data = Z if isinstance(Z, Differences) else None
        z = data.z if data is not None else np.asarray(Z, dtype=np.float64)
        lab = np.asarray(y, dtype=np.float64)
        codes, who = _codes(np.asarray(annotator))
        n = lab.shape[0] if lab.ndim == 1 else -1
        pair = np.arange(n) if pair is None else np.asarray(pair)
        truth = np.full(n, np.nan) if gold is None else np.asarray(gold, dtype=float)
        if z.ndim != 2 or not (z.shape[0] == n == who.size == pair.size == truth.size):
            raise ValueError("Z, y, annotator, pair and gold must describe the same answers")
        if pair.ndim == 1 and (pair.size < 2 or bool(np.all(pair[1:] > pair[:-1]))):
            pairs, first, of_pair = pair, np.arange(n), np.arange(n)  # np.unique's, no sort
        else:
            pairs, first, of_pair = np.unique(pair, return_index=True, return_inverse=True)
            of_pair = of_pair.ravel()
        m, k = pairs.size, codes.size
        if data is not None:  # pairs in order of their first answer (soft_labels_ too): with
            # one answer per pair (the app's usual case) the pairs' rows are ``data`` itself
            if m > 1 and not bool(np.all(first[1:] > first[:-1])):  # else the rank is 0..m-1
                rank = np.empty(m, dtype=np.int64)
                rank[np.argsort(first, kind="stable")] = np.arange(m)
                of_pair, first = rank[of_pair], np.sort(first)
            zp = data if np.array_equal(first, np.arange(n)) else data.take(first)
        else:
            zp = z[first]
        known_pair = np.bincount(of_pair, weights=np.isfinite(truth), minlength=m) > 0
        truth_pair = np.zeros(m)
        truth_pair[of_pair[np.isfinite(truth)]] = truth[np.isfinite(truth)]
        informative = (lab == 0) | (lab == 1)
        counted = np.bincount(who, weights=informative, minlength=k)
        sign = np.where(informative, 2.0 * lab - 1.0, 0.0)  # +1 says comparable, -1 not

        params = {"random_state": 0} | dict(self.explore_params or {})
        if plain is None:
            plain = EXPLORE(**params).fit_differences(Z if data else z, lab)  # an answer each
        params["alpha"] = plain.alpha_
        model, e = plain, np.full(k, a0 / (a0 + b0))
        sigma = plain.sigma_
        if warm is not None and np.shape(warm.sigma) == plain.sigma_.shape:
            known, where = np.isin(codes, warm.annotator), np.searchsorted(warm.annotator, codes)
            e[known] = np.clip(np.asarray(warm.flip_rate)[where[known]], 0.0, 0.5)
            sigma = np.asarray(warm.sigma, dtype=np.float64)
        w, converged, iteration = np.zeros(m), False, 0
        for iteration in range(1, self.max_iter + 1):  # noqa: B007 - n_iter_ below
            q = np.maximum(distances(zp, sigma, params), 0.0)  # BLAS products, chunked
            p = np.clip(2.0 * expit(-q), _EPS, 1.0 - _EPS)
            # E-step: the true label of each pair given all its answers.
            e_clip = np.clip(e, _EPS, 0.5)
            evidence = sign * np.log((1.0 - e_clip) / e_clip)[who]
            logit = np.log(p) - np.log1p(-p) + np.bincount(of_pair, evidence, minlength=m)
            w = np.where(known_pair, truth_pair, expit(logit))
            # M-step: flip rates from the expected disagreements, Σ from the soft labels.
            mismatch = np.where(informative, np.abs(lab - w[of_pair]), 0.0)
            flips = np.bincount(who, weights=mismatch, minlength=k)
            new_e = np.minimum((a0 + flips) / (a0 + b0 + counted), 0.5)
            model = EXPLORE(**params, warm_start=ExploreWarm(sigma)).fit_differences(zp, w)
            sigma = model.warm_state_.sigma
            change = float(np.max(np.abs(new_e - e)))
            e = new_e
            if change < self.tol:
                converged = True
                break
        flips = np.clip(e * (a0 + b0 + counted) - a0, 0.0, counted)
        tail = (1.0 - self.level) / 2.0
        post_a, post_b = a0 + flips, b0 + counted - flips
        # Equal tails, except where the posterior density falls from 0 (a <= 1): then the
        # highest-density interval, which starts at 0.
        at_zero = post_a <= 1.0
        low = np.where(at_zero, 0.0, beta_distribution.ppf(tail, post_a, post_b))
        high = beta_distribution.ppf(np.where(at_zero, self.level, 1.0 - tail), post_a, post_b)
        interval = np.stack([low, high], axis=1)
        self.plain_, self.explore_, self.sigma_ = plain, model, model.sigma_
        self.soft_labels_, self.n_iter_, self.converged_ = w, iteration, converged
        self.reliability_ = Reliability(codes, counted.astype(int), e, interval)
        self.warm_state_ = ReliabilityWarm(codes, e.copy(), sigma)
        return self
