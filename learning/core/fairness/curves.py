"""The violation rate over L, and over all pairs within ε estimated from uniformly sampled pairs
(numpy only).

The audit's headline counts violations at one L (default 1) among each item's k nearest
neighbours within ε; both choices move it. This module gives:

* :func:`rate_curve` — the share of pairs within ε with ``|s_i − s_j| − L·d_ij > GAP_TOL`` at
  every L of a grid (``L_GRID``, log-spaced 0.01–100), and its limit as L → ∞ (the pairs at
  distance 0 whose scores differ): the rate as a curve, on any set of pairs (the neighbour
  graph's, or sampled ones). A pair's own threshold is the L it would need,
  ``|s_i − s_j| / d_ij`` (``learning.core.audit.ViolatingPairs.needed``).
* :func:`all_pairs_rate` — ``m`` pairs drawn uniformly (with replacement) among all unordered
  pairs of distinct items: the share of them within ε (what ε keeps of all pairs), and among
  those the violation rate at L with a 95 % Wilson interval and its curve over L. Pairs drawn
  uniformly and independently make the rate a plain binomial proportion of the pairs within ε
  (conditionally on their number), so the Wilson interval holds; it estimates the rate over
  all n(n−1)/2 pairs, which does not depend on k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from ..audit import GAP_TOL, LEVEL, Interval

__all__ = ["L_GRID", "AllPairs", "all_pairs_rate", "rate_curve", "sampled_pairs", "wilson"]

L_GRID = np.geomspace(0.01, 100.0, 41)
CHUNK = 65_536  # pairs per distance chunk


def wilson(successes: float, trials: float, level: float = LEVEL) -> Interval:
    """A proportion with its Wilson score interval (NaN without trials)."""
    if trials <= 0:
        return Interval(math.nan, math.nan, math.nan)
    z = float(ndtri(0.5 + level / 2.0))
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    )
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def rate_curve(
    differences: ArrayLike, distances: ArrayLike, *, epsilon: float, grid: ArrayLike = L_GRID
) -> tuple[np.ndarray, float, int]:
    """Over the pairs with ``distances ≤ epsilon`` (``differences``: their ``|Δs|``): the
    violation rate at each L of ``grid``, its limit as L → ∞, and the number of such pairs."""
    diff = np.abs(np.asarray(differences, dtype=np.float64)).ravel()
    dist = np.asarray(distances, dtype=np.float64).ravel()
    within = dist <= epsilon
    diff, dist = diff[within], dist[within]
    n = int(diff.size)
    grid = np.asarray(grid, dtype=np.float64)
    if n == 0:
        return np.full(grid.size, np.nan), math.nan, 0
    counts = np.zeros(grid.size)
    for start in range(0, n, CHUNK):
        dd, ss = diff[start : start + CHUNK], dist[start : start + CHUNK]
        counts += ((dd[None, :] - grid[:, None] * ss[None, :]) > GAP_TOL).sum(axis=1)
    limit = float(((dist <= 0) & (diff > GAP_TOL)).sum()) / n
    return counts / n, limit, n


def sampled_pairs(n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``m`` unordered pairs of distinct indices in [0, n), uniform over all n(n−1)/2 pairs,
    drawn independently (with replacement)."""
    if n < 2:
        raise ValueError("need at least two items")
    i = rng.integers(n, size=m)
    j = rng.integers(n - 1, size=m)
    j = j + (j >= i)  # uniform over the others
    return np.minimum(i, j), np.maximum(i, j)


@dataclass(frozen=True)
class AllPairs:
    """The sampled pairs' figures (module docstring)."""

    pairs: int
    within: int
    within_share: Interval
    violation_rate: Interval
    curve: np.ndarray  # the rate at each L of the grid
    limit: float  # as L → ∞

    def as_dict(self) -> dict:
        return {
            "pairs": self.pairs,
            "within": self.within,
            "within_share": self.within_share.as_dict(),
            "violation_rate": self.violation_rate.as_dict(),
            "curve": [None if math.isnan(v) else float(v) for v in self.curve],
            "limit": None if math.isnan(self.limit) else self.limit,
        }


def all_pairs_rate(
    points: ArrayLike,
    scores: ArrayLike,
    *,
    epsilon: float,
    lipschitz: float,
    m: int = 200_000,
    seed: int = 0,
    grid: ArrayLike = L_GRID,
) -> AllPairs:
    """The all-pairs figures of ``m`` uniformly sampled pairs; distances ``‖x_i − x_j‖`` between
    rows of ``points`` (for d_Σ: φW)."""
    x = np.asarray(points, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or s.shape != (x.shape[0],):
        raise ValueError("points must be (n, r) and scores (n,)")
    first, second = sampled_pairs(x.shape[0], m, np.random.default_rng(seed))
    dist = np.empty(m)
    for start in range(0, m, CHUNK):
        a, b = first[start : start + CHUNK], second[start : start + CHUNK]
        dist[start : start + CHUNK] = np.linalg.norm(x[a] - x[b], axis=1)
    diff = np.abs(s[first] - s[second])
    within = dist <= epsilon
    n_within = int(within.sum())
    violations = int((within & (diff - lipschitz * dist > GAP_TOL)).sum())
    curve, limit, _ = rate_curve(diff, dist, epsilon=epsilon, grid=grid)
    return AllPairs(
        pairs=m,
        within=n_within,
        within_share=wilson(n_within, m),
        violation_rate=wilson(violations, n_within),
        curve=curve,
        limit=limit,
    )
