"""Counterfactual twins: a model's score of a record beside its score of the same record with
one sensitive column changed (numpy only).

For each twin pair ``t`` (original ``o_t``, twin ``t``) the change is ``Δ_t = s_t − s_{o_t}``.
Per column, over its pairs:

* **moved share**: the share of pairs with ``|Δ_t| > δ`` (``delta``; a model that ignores the
  column moves none, a model that uses it moves most);
* **mean** and **largest** ``|Δ_t|``;
* with decisions, **decision flips**: the share of pairs whose two decisions differ.

Intervals (95 %): a Poisson bootstrap over **originals** — an original's twins (one per other
value of the column) are resampled together, since they share everything but that value. When no
pair moved (or every pair did) the bootstrap has no spread; the interval then reaches the exact
one-sided binomial bound over the ``m`` originals, ``1 − 0.025^{1/m}`` (times the largest over
the mean number of twins per original, which bounds a share of pairs by a share of originals) —
the rule of three's exact form. For the largest change (a maximum) the interval is the range of
the resampled maximum, as for the audit's worst gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..audit import LEVEL, Interval

__all__ = ["TwinFigures", "twin_figures"]

CHUNK = 8192  # originals per bootstrap chunk


@dataclass(frozen=True)
class TwinFigures:
    """One sensitive column's twin figures (see the module docstring)."""

    pairs: int
    originals: int
    delta: float
    moved: int
    moved_share: Interval
    mean_abs_change: Interval
    max_abs_change: Interval
    decision_flips: Interval | None

    def as_dict(self) -> dict:
        names = ("moved_share", "mean_abs_change", "max_abs_change", "decision_flips")
        out = {"pairs": self.pairs, "originals": self.originals, "delta": self.delta}
        out["moved"] = self.moved
        intervals = {}
        for name in names:
            value = getattr(self, name)
            shown = None if value is None else value.as_dict()
            out[name] = None if shown is None else shown["estimate"]
            intervals[name] = None if shown is None else [shown["low"], shown["high"]]
        out["intervals"] = intervals
        return out


def _percentile(estimate: float, replicates: np.ndarray) -> tuple[float, float]:
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1.0 - LEVEL) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(min(low, estimate)), float(max(high, estimate))


def _share(count: float, total: float, replicates: np.ndarray, m: int, spread: float) -> Interval:
    """A share with its bootstrap interval, widened to the exact bound at 0 or at all."""
    estimate = count / total
    low, high = _percentile(estimate, replicates)
    bound = min(1.0, (1.0 - ((1.0 - LEVEL) / 2.0) ** (1.0 / m)) * spread)
    if count == 0:
        high = max(high, bound)
    elif count == total:
        low = min(low, 1.0 - bound)
    return Interval(float(estimate), low, high)


def twin_figures(
    original_scores: ArrayLike,
    twin_scores: ArrayLike,
    originals: ArrayLike,
    *,
    delta: float = 0.01,
    original_decisions: ArrayLike | None = None,
    twin_decisions: ArrayLike | None = None,
    n_boot: int = 200,
    seed: int = 0,
) -> TwinFigures:
    """The figures of one column's twin pairs: ``original_scores[t]`` and ``twin_scores[t]`` are
    pair ``t``'s two scores, ``originals[t]`` identifies its original (the bootstrap's unit);
    decisions (codes or labels), when given, for both sides."""
    s0 = np.asarray(original_scores, dtype=np.float64)
    s1 = np.asarray(twin_scores, dtype=np.float64)
    group = np.asarray(originals)
    if s0.ndim != 1 or s0.shape != s1.shape or group.shape != s0.shape:
        raise ValueError("scores and originals must be 1-d arrays of one length")
    if s0.size == 0:
        raise ValueError("no twin pairs")
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        raise ValueError("scores must be finite")
    if not (math.isfinite(delta) and delta >= 0):
        raise ValueError(f"delta must be a non-negative number, got {delta!r}")
    change = np.abs(s1 - s0)
    moved = (change > delta).astype(np.float64)
    columns = [np.ones_like(change), moved, change]
    flips = None
    if original_decisions is not None and twin_decisions is not None:
        d0, d1 = np.asarray(original_decisions), np.asarray(twin_decisions)
        if d0.shape != s0.shape or d1.shape != s0.shape:
            raise ValueError("decisions must have one entry per pair")
        flips = (d0 != d1).astype(np.float64)
        columns.append(flips)
    _, unit = np.unique(group, return_inverse=True)
    m = int(unit.max()) + 1
    per_unit = np.column_stack([np.bincount(unit, weights=c, minlength=m) for c in columns])
    worst = np.full(m, -np.inf)
    np.maximum.at(worst, unit, change)
    rng = np.random.default_rng(seed)
    sums = np.zeros((n_boot, per_unit.shape[1]))
    best = np.full(n_boot, -np.inf)
    for start in range(0, m, CHUNK):
        stop = min(start + CHUNK, m)
        weights = rng.poisson(1.0, size=(n_boot, stop - start)).astype(np.float64)
        sums += weights @ per_unit[start:stop]
        chunk_max = np.where(weights > 0, worst[None, start:stop], -np.inf)
        best = np.maximum(best, chunk_max.max(axis=1, initial=-np.inf))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = sums[:, 1:] / sums[:, :1]
    n, total = float(s0.size), per_unit.sum(axis=0)
    counts = per_unit[:, 0]
    spread = float(counts.max() / counts.mean())
    mean_change = total[2] / n
    max_change = float(change.max())
    return TwinFigures(
        pairs=int(n),
        originals=m,
        delta=float(delta),
        moved=int(total[1]),
        moved_share=_share(total[1], n, ratio[:, 0], m, spread),
        mean_abs_change=Interval(mean_change, *_percentile(mean_change, ratio[:, 1])),
        max_abs_change=Interval(
            max_change, *_percentile(max_change, np.where(np.isfinite(best), best, np.nan))
        ),
        decision_flips=None if flips is None else _share(total[3], n, ratio[:, 2], m, spread),
    )
