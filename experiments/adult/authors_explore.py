"""EXPLORE as the seed paper's authors estimate it — a control for the app's estimator — and a
held-out check that scores any Σ on pairs it did not see.

The authors' estimator (their public code's ``proximal_gd_sigmoid``, read, not copied; the
paper's Algorithm, eq. (2.6)): the negative log-likelihood of the response model
P(comparable | z) = 2σ(−zᵀΣz) over pair differences z, minimised by **stochastic proximal
gradient descent** — a minibatch of pairs (1,000 for Adult), its gradient, a step of size
1 / (1 + ⌊m / 100⌋), the projection onto the PSD cone (eigenvalues below 10⁻⁸ dropped) — from
the identity, for a fixed number of steps (10,000 for Adult). No penalty, no prior, no
held-out choice of anything: what the paper's Adult table used.

Gradient of the mean negative log-likelihood at Σ, with dᵢ = zᵢᵀΣzᵢ:
∇ = (1/b) Σᵢ wᵢ zᵢzᵢᵀ, wᵢ = σ(dᵢ) for a comparable pair (−log 2σ(−d) = log(1 + eᵈ) − log 2) and
wᵢ = −2σ(dᵢ) / (eᵈⁱ − 1) for an incomparable one (−log(1 − 2σ(−d))); dᵢ floored at 10⁻¹⁰ as
theirs is.

:func:`heldout_check` splits the pairs once (seeded), fits on one part and scores the other:
the mean log-likelihood gain per pair over the constant prediction (the training part's
comparable rate) with its 95 % interval, and the AUC of d for telling incomparable pairs
(larger d) from comparable ones — the figures the app's verdict uses, on the same footing for
any estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from sklearn.metrics import roc_auc_score

from learning.core.explore import p_comparable

BATCH = 1_000
STEPS = 10_000
FLOOR = 1e-10


def psd_project(sigma: np.ndarray, floor: float = 1e-8) -> np.ndarray:
    """The symmetric part of ``sigma`` with its eigenvalues below ``floor`` dropped."""
    values, vectors = np.linalg.eigh((sigma + sigma.T) / 2)
    keep = values >= floor
    return (vectors[:, keep] * values[keep]) @ vectors[:, keep].T


def nll_gradient(z: np.ndarray, comparable: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The gradient of the mean negative log-likelihood of 2σ(−zᵀΣz) (module docstring)."""
    d = np.maximum(np.einsum("ij,ij->i", z @ sigma, z), FLOOR)
    s = expit(d)
    with np.errstate(over="ignore"):
        weights = np.where(comparable, s, -2.0 * s / np.expm1(d))
    return (z.T * weights) @ z / len(z)


def proximal_explore(
    z: np.ndarray,
    comparable: np.ndarray,
    *,
    batch: int = BATCH,
    steps: int = STEPS,
    seed: int = 0,
) -> np.ndarray:
    """Σ by the authors' stochastic proximal gradient (module docstring), from the identity."""
    z = np.asarray(z, dtype=np.float64)
    comparable = np.asarray(comparable, dtype=bool)
    rng = np.random.default_rng(seed)
    sigma = np.eye(z.shape[1])
    size = min(batch, len(z))
    for m in range(steps):
        rows = rng.choice(len(z), size=size, replace=False)
        sigma = psd_project(sigma - nll_gradient(z[rows], comparable[rows], sigma) / (1 + m // 100))
    return sigma


@dataclass(frozen=True)
class Heldout:
    pairs: int
    gain: float  # mean log-likelihood gain per held-out pair over the constant prediction
    gain_interval: tuple[float, float]
    auc: float

    def validity(self) -> dict:
        """The figures in the shape of the app's ``validity`` object, judged by the app's
        pair-level rule (informative when the interval lies above 0, not informative when
        below, else cannot tell yet)."""
        low, high = self.gain_interval
        verdict = "informative" if low > 0 else "not informative" if high < 0 else "cannot tell yet"
        figures = {
            "basis": "held-out pairs (one 80/20 split)",
            "gain": self.gain,
            "gain_interval": [low, high],
            "auc": self.auc,
            "items": None,
            "pairs": self.pairs,
        }
        return {"verdict": verdict, "figures": figures, "needs": "", "override": None}

    def line(self) -> str:
        low, high = self.gain_interval
        return (
            f"gain over the constant {self.gain:+.3f} per pair (95 % interval {low:+.3f} to "
            f"{high:+.3f}), AUC {self.auc:.3f}, {self.pairs:,} held-out pairs"
        )


def _loglik(p: np.ndarray, comparable: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.where(comparable, np.log(p), np.log1p(-p))


def heldout_score(sigma: np.ndarray, z: np.ndarray, comparable: np.ndarray, rate: float) -> Heldout:
    """Σ scored on pairs it did not see, against the constant ``rate`` of comparable."""
    d = np.einsum("ij,ij->i", z @ sigma, z)
    gain = _loglik(p_comparable(d), comparable) - _loglik(np.full(len(z), rate), comparable)
    half = 1.959964 * gain.std(ddof=1) / np.sqrt(len(gain))
    mean = float(gain.mean())
    return Heldout(len(z), mean, (mean - half, mean + half), float(roc_auc_score(~comparable, d)))


def heldout_check(
    z: np.ndarray,
    comparable: np.ndarray,
    fit: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    share: float = 0.2,
    seed: int = 0,
) -> tuple[np.ndarray, Heldout]:
    """Fit on a random ``1 − share`` of the pairs, score on the rest; ``(Σ, figures)``."""
    comparable = np.asarray(comparable, dtype=bool)
    order = np.random.default_rng(seed).permutation(len(z))
    cut = int(round(len(z) * (1 - share)))
    train, test = order[:cut], order[cut:]
    sigma = fit(z[train], comparable[train])
    return sigma, heldout_score(sigma, z[test], comparable[test], float(comparable[train].mean()))
