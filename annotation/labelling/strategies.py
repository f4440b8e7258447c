"""Active-learning choices for the sampler's ``targeted`` and ``information`` strategies (numpy).

**targeted** — the candidate whose P(comparable) under the current EXPLORE fit is nearest
``TARGET_P`` (0.65); a uniformly random candidate with probability ``TARGETED_EXPLORE`` (so no
part of the pool is only ever reached through its partners). Random pool pairs are mostly
incomparable (a median P(comparable) near 0.2 in the demo's space), so they teach EXPLORE little
about the directions that do not matter; pairs just on the comparable side of the boundary do.
``uncertainty`` (nearest 1/2) does the same with a less useful target. Each call draws its own
random candidates, so annotators asking at once get different pairs; a diversity step against
the crowd's newest pairs was measured and cost labels. docs/active_learning.md has the
measurements that chose 0.65, the exploration share and no diversity step.

**information** — EXPLORE's response model is P(comparable) = p(q) = 2 sigmoid(-q) with
q = zᵀ Σ z. The Fisher information one answer carries about Σ is
``h(q) · vec(zzᵀ) vec(zzᵀ)ᵀ`` with ``h(q) = p'(q)² / (p (1 - p))``. A D-optimal design picks the
pair that most increases the log determinant of the information already collected,
``log(1 + h(q) uᵀ M⁻¹ u)`` (``u = vec(zzᵀ)``). Cheap low-rank form: Σ is parametrised in the
``RANK`` leading eigen-directions of the current fit (``c = U_rᵀ z``, ``u = vech(c cᵀ)`` with √2
on the off-diagonal, r(r+1)/2 numbers), and ``M`` is the information of the study's **recent**
answers (the sampler's newest-judgments window, answers by everyone) plus a ridge: high for
pairs informative under the fit and unlike what the crowd was just asked (batch mode through
the shared window); a share ``EXPLORE_SHARE`` of picks is uniform. Measured: no better than
random (the rank-8 span leaves out the directions still unknown).

**control pairs** — a fixed share ``CONTROL_SHARE`` (half) of all pairs, chosen by a hash of
the two item ids (``pair_control``; independent of the validation folds, which read the same
hash's leading bits). Every strategy but ``random`` offers them only as uniform draws: a share
``CONTROL_PICKS`` (three quarters) of its picks is a uniformly random control pair among the
candidates (reason ``control``), and its own picks skip control pairs. The answers to control
pairs are then a uniform sample of pairs whatever the strategy (``control_only``), which is what
the figures about a fresh pair read: the drift flag (``learning/versions/drift.py``: a strategy
that moves to uncertain pairs changes which pairs are asked, not the rule, and on control pairs
it cannot look like a change of rule), the verdict on new items and its re-check
(``learning/refits/newitems.py``: a version's gain on the strategy's own picks, pairs where it
is unsure, is not its gain on a fresh pair of new people). Under ``random`` every pick is
uniform already, and they read every answer. The two shares are separate numbers on purpose:
which pairs are control pairs must never change for a study with answers (its earlier picks
would be read as uniform draws), while the share of picks can (issue 35: with a quarter, then
half of the picks, the flag saw a change of rule within 300 answers in too few adaptive
studies; ``benchmarks/drift.py``, docs/refits.md "Drift flags"). While the drift flag
**watches** (its last check fell short of its promise by more than ``WATCH_Z`` standard errors,
``learning/versions/drift.py: watching``) the sampler passes ``share`` 1: every pick is a
control pair until the next check, which then compares more answers.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

TARGET_P = 0.65
TARGETED_EXPLORE = 0.05
RANK = 8
EXPLORE_SHARE = 0.1
RIDGE = 1.0  # in units of one average candidate's information
CONTROL_SHARE = 0.5  # of all pairs, by hash: fixed, or earlier own picks would count as uniform
CONTROL_PICKS = 0.75  # of a non-random strategy's picks: a uniformly random control pair
CONTROL_BITS = 20  # the hash's bits below the first 20 decide control (the folds read the top)


def pair_hash_unit(item_a: np.ndarray, item_b: np.ndarray) -> np.ndarray:
    """A fixed pseudo-random number in [0, 1) per pair (splitmix64 of the item ids)."""
    with np.errstate(over="ignore"):
        z = np.asarray(item_a).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = z + np.asarray(item_b).astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def hash_control(unit: np.ndarray, share: float | None = None) -> np.ndarray:
    """Whether pairs of hash ``unit`` (``pair_hash_unit``) are control pairs: the hash's lower
    bits below ``share`` (default ``CONTROL_SHARE``), so that control and the validation folds
    are independent."""
    share = CONTROL_SHARE if share is None else share
    scaled = np.asarray(unit, dtype=np.float64) * float(1 << CONTROL_BITS)
    return scaled - np.floor(scaled) < share


def pair_control(item_a: np.ndarray, item_b: np.ndarray) -> np.ndarray:
    """Whether the pairs (item ids, canonical order) are control pairs (module docstring)."""
    return hash_control(pair_hash_unit(item_a, item_b))


def control_only(strategy: str) -> bool:
    """Whether figures about a uniformly drawn pair read only the answers to control pairs:
    under every strategy but ``random`` (module docstring)."""
    return str(strategy) != "random"


def control_pick(
    control: np.ndarray, rng: np.random.Generator, share: float | None = None
) -> tuple[int | None, np.ndarray]:
    """For a non-random strategy over candidates whose control flags are ``control``: with
    probability ``share`` (default ``CONTROL_PICKS``) the index of a uniformly random control
    candidate (None when there is none), and always the candidates the strategy itself may
    pick (the others; all of them when every candidate is a control pair)."""
    own = np.flatnonzero(~control)
    share = CONTROL_PICKS if share is None else share
    if rng.random() < share and control.any():
        chosen = np.flatnonzero(control)
        return int(chosen[int(rng.integers(len(chosen)))]), own
    return None, own if own.size else np.arange(control.size)


def pair_information(q: np.ndarray) -> np.ndarray:
    """h(q) = p'(q)² / (p (1 - p)) for p = 2 sigmoid(-q), q >= 0 (finite as q -> 0)."""
    q = np.maximum(np.asarray(q, dtype=np.float64), 1e-9)
    s = expit(-q)  # sigmoid(-q); p = 2 s, p' = -2 s (1 - s), 1 - p = 1 - 2 s
    p = 2.0 * s
    return 4.0 * s * s * (1.0 - s) ** 2 / np.maximum(p * (1.0 - p), 1e-300)


def _features(c: np.ndarray) -> np.ndarray:
    """vech(c cᵀ) per row, off-diagonal entries times √2 (so ⟨u, u'⟩ = ⟨ccᵀ, c'c'ᵀ⟩_F)."""
    r = c.shape[1]
    i, j = np.triu_indices(r)
    weight = np.where(i == j, 1.0, np.sqrt(2.0))
    return c[:, i] * c[:, j] * weight


def leading_directions(factor: np.ndarray, rank: int = RANK) -> np.ndarray:
    """The ``rank`` leading eigenvectors of Σ = W Wᵀ (d × rank), from W's SVD."""
    u, _, _ = np.linalg.svd(factor, full_matrices=False)
    return u[:, : min(rank, u.shape[1])]


def information_gain(
    z: np.ndarray,
    q: np.ndarray,
    recent_z: np.ndarray,
    recent_q: np.ndarray,
    directions: np.ndarray,
) -> np.ndarray:
    """log(1 + h uᵀ M⁻¹ u) per candidate row of ``z`` (q: its squared distances under Σ̂);
    M = ridge + the information of the ``recent_z`` answers (their squared distances
    ``recent_q``), all in the span of ``directions``."""
    u = _features(z @ directions)
    h = pair_information(q)
    weighted = h[:, None] * u
    scale = float(np.mean(np.einsum("ij,ij->i", weighted, u))) / u.shape[1] or 1.0
    m = RIDGE * scale * np.eye(u.shape[1])
    if len(recent_z):
        ur = _features(recent_z @ directions)
        m += (pair_information(recent_q)[:, None] * ur).T @ ur
    solved = np.linalg.solve(m, u.T).T
    return np.log1p(h * np.einsum("ij,ij->i", u, solved))


def information_pick(
    z: np.ndarray,
    q: np.ndarray,
    recent_z: np.ndarray,
    recent_q: np.ndarray,
    factor: np.ndarray,
    rng: np.random.Generator,
    explore: float = EXPLORE_SHARE,
) -> tuple[int, float | None]:
    """Index of the candidate to offer and its information gain (None for an exploration pick)."""
    if rng.random() < explore:
        return int(rng.integers(len(z))), None
    gain = information_gain(z, q, recent_z, recent_q, leading_directions(factor))
    best = np.flatnonzero(gain >= gain.max() - 1e-12)
    pick = int(best[int(rng.integers(len(best)))])
    return pick, float(gain[pick])


def uncertainty_pick(p: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the candidate whose P(comparable) ``p`` is nearest 1/2 (ties at random)."""
    gap = np.abs(np.asarray(p, dtype=np.float64) - 0.5)
    best = np.flatnonzero(gap <= gap.min() + 1e-12)
    return int(best[int(rng.integers(len(best)))])


def targeted_pick(
    q: np.ndarray,
    rng: np.random.Generator,
    target: float = TARGET_P,
    explore: float = TARGETED_EXPLORE,
) -> tuple[int, float | None]:
    """Index of the candidate (squared distances ``q``) whose P(comparable) is nearest
    ``target`` (ties at random) and its gap to it, or with probability ``explore`` a uniform
    one (score None)."""
    if rng.random() < explore:
        return int(rng.integers(len(q))), None
    gap = np.abs(2.0 * expit(-np.asarray(q, dtype=np.float64)) - target)
    best = np.flatnonzero(gap <= gap.min() + 1e-12)
    pick = int(best[int(rng.integers(len(best)))])
    return pick, float(gap[pick])
