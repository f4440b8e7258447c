"""Auditing a model's scores for individual fairness under a metric: numpy only.

A model with scores ``s`` treats comparable people alike when it is Lipschitz in the fair
metric (Dwork et al. 2012): ``|s(x) − s(x')| ≤ L · d_Σ(x, x')`` with
``d_Σ(x, x') = ‖Wᵀ(φ(x) − φ(x'))‖``, ``Σ = W Wᵀ`` — the square root of the seed paper's
quadratic form, a true (pseudo-)metric. Given each item's ``k`` nearest neighbours under a metric
(searched elsewhere; ``learning.audits.search``), this module computes:

* **violations**: (item, neighbour) pairs within ``ε`` (``d ≤ ε``) whose scores differ by more
  than ``L · d``; a pair's **gap** is ``|s_i − s_j| − L · d_ij`` (how far past the bound; a gap
  of at most ``GAP_TOL`` is float noise, not a violation);
* per item ``i`` (``N_i`` its k neighbours, ``E_i ⊆ N_i`` those within ε): ``n_i = |E_i|``,
  ``v_i`` its violations, ``g_i`` their summed gaps, ``m_i`` its worst gap; the **violation
  rate** ``Σ v_i / Σ n_i`` (the share of (item, neighbour) pairs within ε that fail), the **mean
  gap** ``Σ g_i / Σ v_i`` and the **worst gap** ``max m_i``;
* **consistency**, AIF360's ``1 − mean_i |ŷ_i − mean_{j∈N_i} ŷ_j|`` with the metric's
  neighbours: with decisions, ``|ŷ_i − mean ŷ_j|`` is the share of ``i``'s neighbours whose
  decision differs from ``i``'s (equal to AIF360's for 0/1 labels, and defined for any number of
  classes); without, the scores themselves;
* **decision flips** (with decisions): the share of items whose nearest neighbour gets the other
  decision.

Every figure comes with a 95 % interval from a Poisson bootstrap over items (each item's
``n_i, v_i, g_i, m_i, …`` reweighted together; ``n_boot`` replicates, in chunks of items, so
memory stays ``O(n_boot · CHUNK)`` for any number of items). The neighbour graph is held fixed:
the interval says how much the figure depends on which items were audited, not on the search.
For the worst gap (a maximum, for which no bootstrap is consistent) the interval is the range
of the resampled maximum: its low end shows how much the worst case hinges on a few items.

:func:`field_shares` splits ``d_Σ²`` of a pair among fields (blocks of φ's columns): field
``f``'s share is its own part ``z_fᵀ Σ_ff z_f`` (the squared distance were the pair to differ in
``f`` alone) over the sum of the fields' own parts — between 0 and 1, adding up to 1.
:func:`learning.core.fairness.fields.field_weights` says it of the whole metric (each field's
share of Σ's trace).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .psd import psd_factor

__all__ = [
    "GAP_TOL",
    "AuditFigures",
    "Interval",
    "ViolatingPairs",
    "comparable_radius",
    "consistency",
    "field_shares",
    "item_statistics",
    "metric_factor",
    "neighbour_figures",
    "scale_to_match",
    "violating_pairs",
]

GAP_TOL = 1e-9  # a gap this small is float noise (equal scores of identical items)
CHUNK = 8192  # items per bootstrap chunk
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """An estimate and its interval (NaN where the figure is undefined, e.g. no pair within ε)."""

    estimate: float
    low: float
    high: float

    def as_dict(self) -> dict:
        return {k: (None if math.isnan(v) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class AuditFigures:
    """One metric's summary (see the module docstring)."""

    items: int
    pairs_within: int  # (item, neighbour) pairs with d ≤ ε
    violations: int  # those that violate
    violation_rate: Interval
    mean_gap: Interval
    worst_gap: Interval
    consistency: Interval
    decision_flip: Interval | None

    def as_dict(self) -> dict:
        out = {"items": self.items, "pairs_within": self.pairs_within}
        out["violations"] = self.violations
        for name in ("violation_rate", "mean_gap", "worst_gap", "consistency", "decision_flip"):
            value = getattr(self, name)
            out[name] = None if value is None else value.as_dict()
        return out


def metric_factor(sigma: ArrayLike, *, rtol: float = 1e-10) -> np.ndarray:
    """``W`` (d × r) with ``W Wᵀ = Σ``, keeping only the ``r`` directions whose eigenvalue is above
    ``rtol · λ_max`` (the others Σ ignores), so a search in ``φW`` works in ``r ≤ d`` dimensions
    (``‖Wᵀz‖ = d_Σ`` up to the dropped eigenvalues)."""
    factor = psd_factor(sigma)
    eigenvalues = (factor * factor).sum(axis=0)  # the columns are √λ · v
    keep = eigenvalues > rtol * max(float(eigenvalues.max(initial=0.0)), np.finfo(float).tiny)
    return np.ascontiguousarray(factor[:, keep])


def comparable_radius(p: float = 0.5) -> float:
    """The ``d_Σ`` at which EXPLORE's response model ``P(comparable) = 2σ(−d_Σ²)`` equals ``p``:
    ``√ln(2/p − 1)`` (``p = ½``: ``√ln 3 ≈ 1.048``, the pairs the metric deems more likely
    comparable than not)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    return math.sqrt(math.log(2.0 / p - 1.0))


def scale_to_match(reference: ArrayLike, other: ArrayLike) -> float:
    """``c`` with ``median⁺(c · other) = median⁺(reference)`` (medians of the positive entries;
    1 when either has none): puts a second metric's neighbour distances on the first's scale."""
    ref = np.asarray(reference, dtype=np.float64).ravel()
    oth = np.asarray(other, dtype=np.float64).ravel()
    ref, oth = ref[ref > 0], oth[oth > 0]
    if ref.size == 0 or oth.size == 0:
        return 1.0
    return float(np.median(ref) / np.median(oth))


def _check(neighbours: np.ndarray, distances: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.asarray(neighbours, dtype=np.int64)
    dist = np.asarray(distances, dtype=np.float64)
    if idx.ndim != 2 or idx.shape != dist.shape or idx.shape[0] != n:
        raise ValueError(
            f"neighbours and distances must both be (n, k) with n = {n}, got "
            f"{idx.shape} and {dist.shape}"
        )
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError("neighbour indices must lie in [0, n)")
    if not np.all(np.isfinite(dist)) or (dist < 0).any():
        raise ValueError("distances must be finite and non-negative")
    return idx, dist


def _gaps(scores, idx, dist, lipschitz) -> np.ndarray:
    return np.abs(scores[:, None] - scores[idx]) - lipschitz * dist


def _check_params(scores, epsilon: float, lipschitz: float) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError("scores must be a finite 1-d array")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}")
    if not (math.isfinite(lipschitz) and lipschitz > 0):
        raise ValueError(f"lipschitz must be a positive number, got {lipschitz!r}")
    return s


def consistency(neighbours: ArrayLike, values: ArrayLike, *, categorical: bool) -> np.ndarray:
    """Per item ``|ŷ_i − mean_{j∈N_i} ŷ_j|`` (``categorical``: the share of neighbours whose value
    differs from ``i``'s). The consistency figure is ``1 −`` its mean."""
    idx = np.asarray(neighbours, dtype=np.int64)
    y = np.asarray(values)
    if categorical:
        return (y[idx] != y[:, None]).mean(axis=1)
    y = y.astype(np.float64)
    return np.abs(y - y[idx].mean(axis=1))


def item_statistics(
    neighbours: ArrayLike,
    distances: ArrayLike,
    scores: ArrayLike,
    *,
    epsilon: float,
    lipschitz: float,
    decisions: ArrayLike | None = None,
) -> dict[str, np.ndarray]:
    """Per-item arrays ``n, v, g, m, c`` (and ``f``, decision flips, with decisions): the module
    docstring's ``n_i, v_i, g_i, m_i``, consistency's ``|ŷ_i − mean ŷ_j|``; ``m_i = −inf`` when
    item ``i`` has no violation."""
    s = _check_params(scores, epsilon, lipschitz)
    idx, dist = _check(neighbours, distances, s.size)
    within = dist <= epsilon
    gaps = _gaps(s, idx, dist, lipschitz)
    bad = within & (gaps > GAP_TOL)
    stats = {
        "n": within.sum(axis=1).astype(np.float64),
        "v": bad.sum(axis=1).astype(np.float64),
        "g": np.where(bad, gaps, 0.0).sum(axis=1),
        "m": np.where(bad, gaps, -np.inf).max(axis=1, initial=-np.inf),
    }
    if decisions is None:
        stats["c"] = consistency(idx, s, categorical=False)
    else:
        y = np.asarray(decisions)
        if y.shape != s.shape:
            raise ValueError("decisions must have one entry per score")
        stats["c"] = consistency(idx, y, categorical=True)
        stats["f"] = (y[idx[:, 0]] != y).astype(np.float64) if idx.shape[1] else np.zeros(s.size)
    return stats


def _ratio(num, den) -> np.ndarray:
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _interval(estimate: float, replicates: np.ndarray) -> Interval:
    finite = replicates[np.isfinite(replicates)]
    if not math.isfinite(estimate) or finite.size == 0:
        return Interval(
            float(estimate) if math.isfinite(estimate) else math.nan, math.nan, math.nan
        )
    tail = (1.0 - LEVEL) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return Interval(float(estimate), float(low), float(high))


def _bootstrap(stats: dict[str, np.ndarray], n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Poisson-bootstrap replicates of the weighted sums of ``n v g c f`` and of ``1`` (items),
    and of the maximum of ``m`` over the resampled items; in chunks of ``CHUNK`` items."""
    names = [k for k in ("n", "v", "g", "c", "f") if k in stats]
    columns = np.column_stack([stats[k] for k in names] + [np.ones_like(stats["n"])])
    maxima = stats["m"]
    rng = np.random.default_rng(seed)
    sums = np.zeros((n_boot, columns.shape[1]))
    best = np.full(n_boot, -np.inf)
    for start in range(0, columns.shape[0], CHUNK):
        stop = min(start + CHUNK, columns.shape[0])
        weights = rng.poisson(1.0, size=(n_boot, stop - start)).astype(np.float64)
        sums += weights @ columns[start:stop]
        chunk_max = np.where(weights > 0, maxima[None, start:stop], -np.inf)
        best = np.maximum(best, chunk_max.max(axis=1, initial=-np.inf))
    out = {k: sums[:, i] for i, k in enumerate(names)}
    out["items"] = sums[:, -1]
    out["m"] = best
    return out


def neighbour_figures(
    neighbours: ArrayLike,
    distances: ArrayLike,
    scores: ArrayLike,
    *,
    epsilon: float,
    lipschitz: float,
    decisions: ArrayLike | None = None,
    n_boot: int = 200,
    seed: int = 0,
) -> AuditFigures:
    """The summary of one metric's neighbour graph: the module docstring's figures, each with its
    bootstrap interval. ``neighbours``/``distances``: (n, k), each item's k nearest neighbours
    (the item itself excluded) and their distances; ``decisions``: integer codes or labels."""
    stats = item_statistics(
        neighbours, distances, scores, epsilon=epsilon, lipschitz=lipschitz, decisions=decisions
    )
    n_items = stats["n"].size
    boot = _bootstrap(stats, n_boot, seed)
    total_n, total_v = stats["n"].sum(), stats["v"].sum()
    worst = float(stats["m"].max(initial=-np.inf))
    worst_boot = np.where(np.isfinite(boot["m"]), boot["m"], np.nan)
    flip = None
    if "f" in stats:
        flip = _interval(float(stats["f"].mean()), _ratio(boot["f"], boot["items"]))
    return AuditFigures(
        items=n_items,
        pairs_within=int(total_n),
        violations=int(total_v),
        violation_rate=_interval(float(_ratio(total_v, total_n)), _ratio(boot["v"], boot["n"])),
        mean_gap=_interval(float(_ratio(stats["g"].sum(), total_v)), _ratio(boot["g"], boot["v"])),
        worst_gap=_interval(worst if math.isfinite(worst) else math.nan, worst_boot),
        consistency=_interval(
            float(1.0 - stats["c"].mean()), 1.0 - _ratio(boot["c"], boot["items"])
        ),
        decision_flip=flip,
    )


@dataclass(frozen=True)
class ViolatingPairs:
    """Unordered violating pairs ``(first < second)``, worst first: by the Lipschitz constant
    the pair demands, ``needed = |s_i − s_j| / max(d, floor)`` (descending; pairs the metric puts
    at distance ~0 come first, by their score difference), then by gap, then by index.
    ``floor`` is ``FLOOR`` times the median positive neighbour distance."""

    first: np.ndarray
    second: np.ndarray
    distance: np.ndarray
    gap: np.ndarray
    needed: np.ndarray

    def __len__(self) -> int:
        return int(self.first.size)

    def take(self, positions: np.ndarray) -> ViolatingPairs:
        return ViolatingPairs(
            *(getattr(self, f)[positions] for f in ("first", "second", "distance", "gap", "needed"))
        )


FLOOR = 1e-6


def violating_pairs(
    neighbours: ArrayLike,
    distances: ArrayLike,
    scores: ArrayLike,
    *,
    epsilon: float,
    lipschitz: float,
) -> ViolatingPairs:
    """Every violating (item, neighbour) pair once as an unordered pair, worst first."""
    s = _check_params(scores, epsilon, lipschitz)
    idx, dist = _check(neighbours, distances, s.size)
    gaps = _gaps(s, idx, dist, lipschitz)
    rows, cols = np.nonzero((dist <= epsilon) & (gaps > GAP_TOL))
    i, j = rows.astype(np.int64), idx[rows, cols]
    first, second = np.minimum(i, j), np.maximum(i, j)
    _, keep = np.unique(first * s.size + second, return_index=True)
    first, second = first[keep], second[keep]
    d, g = dist[rows, cols][keep], gaps[rows, cols][keep]
    positive = dist[dist > 0]
    floor = FLOOR * (float(np.median(positive)) if positive.size else 1.0)
    needed = np.abs(s[first] - s[second]) / np.maximum(d, floor)
    order = np.lexsort((second, first, -g, -needed))
    return ViolatingPairs(first[order], second[order], d[order], g[order], needed[order])


def field_shares(differences: ArrayLike, factor: ArrayLike, starts: ArrayLike) -> np.ndarray:
    """Each field's share of a pair's ``d_Σ²`` (rows of ``differences`` = ``φ(a) − φ(b)``): field
    ``f``'s own part ``‖W_fᵀ z_f‖² = z_fᵀ Σ_ff z_f`` — the squared distance of the pair if it
    differed in ``f`` alone — over the sum of all fields' own parts (``Σ = W Wᵀ``, ``factor`` =
    W; fields are the column blocks that begin at ``starts``, ascending, the first 0). Each
    share lies in [0, 1] and they add up to 1; Σ's cross terms between fields, which can be
    negative (fields that offset each other) are left out, so that no share reads 268 % or
    −193 %. A pair that differs in no field Σ sees gets NaN shares."""
    z = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    w = np.asarray(factor, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    if starts.size == 0 or starts[0] != 0 or np.any(np.diff(starts) <= 0):
        raise ValueError("starts must be ascending field starts beginning at 0")
    ends = np.append(starts[1:], z.shape[1])
    own = np.column_stack(
        [((z[:, s:e] @ w[s:e]) ** 2).sum(axis=1) for s, e in zip(starts, ends, strict=True)]
    )
    total = own.sum(axis=1, keepdims=True)
    scale = np.maximum(np.abs(z).sum(axis=1, keepdims=True), np.finfo(float).tiny)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 1e-24 * scale, own / total, np.nan)
