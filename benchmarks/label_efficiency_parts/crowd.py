"""The simulated crowd and the yardstick: the paper's response model P(comparable) = 2σ(-zᵀΣz),
one true label per pair and seed, annotators who flip it at their rate; held-out expected
log-likelihood against the start and the full-data reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .sources import ItemSource

HELD_OUT = 4_000
CROWD_FLIPS = (0.0, 0.0, 0.0, 0.0, 0.0, 0.05, 0.10, 0.20, 0.30, 0.5)  # 0.5: careless
TARGET_SHARE = 0.95


def quad(z: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return np.einsum("ij,jk,ik->i", z, sigma, z)


def p_of(q: np.ndarray) -> np.ndarray:
    return np.clip(2.0 * expit(-q), 1e-12, 1 - 1e-12)


def unit_hash(*keys: np.ndarray) -> np.ndarray:
    """A fixed uniform number per tuple of integers (splitmix64)."""
    z = np.zeros(np.broadcast(*keys).shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in keys:
            z = (z + np.asarray(k).astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def answers(i, j, p0, annotator, flips, seed) -> np.ndarray:
    """Observed labels: the pair's true label (fixed per pair and seed) flipped at the rate."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    truth = unit_hash(lo, hi, seed) < p0
    flipped = unit_hash(lo, hi, annotator, seed + 7919) < np.asarray(flips)[annotator]
    return (truth ^ flipped).astype(np.float64)


@dataclass(frozen=True)
class Yardstick:
    z: np.ndarray
    p0: np.ndarray
    sigma0: np.ndarray
    start: float
    best: float  # Σ₀'s own expected log-likelihood
    full: float
    target: float

    def loglik(self, sigma: np.ndarray | None) -> float:
        if sigma is None:
            return self.start
        p = p_of(quad(self.z, sigma))
        return float(np.mean(self.p0 * np.log(p) + (1 - self.p0) * np.log1p(-p)))

    def error(self, sigma: np.ndarray | None) -> float:
        if sigma is None:
            return float("nan")
        return float(np.linalg.norm(sigma - self.sigma0) / np.linalg.norm(self.sigma0))


def random_pairs(n_items: int, size: int, rng) -> tuple[np.ndarray, np.ndarray]:
    i = rng.integers(n_items, size=size)
    j = rng.integers(n_items - 1, size=size)
    return i, j + (j >= i)


def yardstick(
    source: ItemSource, full_labels: int, seed: int, share: float, weighted: bool
) -> Yardstick:
    """Held-out pairs, the start, and the full-data reference: EXPLORE on ``full_labels``
    answers collected at random as the study would (each pair answered by 2 of the crowd),
    reliability-weighted when the study's refits are (``weighted``)."""
    from learning.core.explore import EXPLORE
    from learning.core.reliability import ReliableEXPLORE

    x = source.vectors
    rng = np.random.default_rng(10_000 + seed)
    i, j = random_pairs(len(x), HELD_OUT, rng)
    z = x[i] - x[j]
    p0 = p_of(quad(z, source.sigma0))
    scale = np.log(3.0) / np.median(np.einsum("ij,ij->i", z, z))
    base = Yardstick(z, p0, source.sigma0, 0.0, 0.0, 0.0, 0.0)
    start = base.loglik(scale * np.eye(x.shape[1]))
    fi, fj = random_pairs(len(x), full_labels // 2, rng)
    fi, fj = np.repeat(fi, 2), np.repeat(fj, 2)
    who = np.arange(fi.size) % len(CROWD_FLIPS)
    y = answers(fi, fj, p_of(quad(x[fi] - x[fj], source.sigma0)), who, CROWD_FLIPS, seed)
    z_full = x[fi] - x[fj]
    if weighted:  # the same estimator as the study's refit
        pair = np.arange(fi.size) // 2
        fit = ReliableEXPLORE(explore_params={"random_state": 0})
        sigma = fit.fit_differences(z_full, y, who, pair=pair).sigma_
    else:
        sigma = EXPLORE(random_state=0).fit_differences(z_full, y).sigma_
    full = base.loglik(sigma)
    return Yardstick(
        z, p0, source.sigma0, start, base.loglik(source.sigma0), full,
        start + share * (full - start),
    )  # fmt: skip
