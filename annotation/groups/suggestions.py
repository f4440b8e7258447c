"""Group curation helpers: items nearest to a group's centroid, and a heterogeneity indicator.

Heterogeneity (FACE is biased when a group's members differ in relevant attributes) is one
number, read against **random groups of the same size drawn from the study's pool**:

* the statistic, with a ready FACE version of the study (``Sigma = I - Q Q^T``, ``Q`` the top-k
  sensitive factors): the **share of the group's within-group variance outside the sensitive
  factors**, ``||C W||^2 / (lambda_max(Sigma) ||C||^2)`` with ``C`` the centred member vectors
  and ``Sigma = W W^T``. 0 means the members differ only along the sensitive factors (what FACE
  assumes); 1 means all their differences are ones the metric keeps;
* without one: the **relative spread**, the mean pairwise Euclidean distance within the group
  divided by the mean distance between random items of the pool (near 1: as spread out as
  random items).

Neither number has a meaningful fixed threshold: in a 300-dimensional space almost any small
group has most of its variance outside a few sensitive factors (four popular girls' names
score 0.83). So the same statistic is computed for random groups of the same size from the
pool (seeded, cached per study, size and metric version), and the indicator reports the share
of random groups at least as homogeneous as this one (``random_share``, a one-sided empirical
p-value). It warns when that share is above ``WARN_RANDOM_SHARE``: the group is then not
clearly more alike than a random draw of the pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.distance import pdist

from annotation.hooks import StudyMetric, current_metric
from annotation.models import Study
from annotation.selectors import study_pool
from spaces.models import Item

WARN_RANDOM_SHARE = 0.05  # warn when ≥ 5% of random groups are as homogeneous
RANDOM_GROUPS = 200  # random groups per size, fewer for large groups (RANDOM_ROWS)
RANDOM_ROWS = 10_000  # at most this many vectors read for one calibration
CHUNK = 65536
_pool_spread_cache: dict[tuple, float] = {}
_random_cache: dict[tuple, np.ndarray] = {}


@dataclass(frozen=True)
class Heterogeneity:
    method: str  # face-outside-share | relative-spread | none
    value: float | None
    warn: bool
    explanation: str
    # Calibration against random groups of the same size from the pool.
    random_share: float | None = None  # share of random groups at least as homogeneous
    random_median: float | None = None
    random_low: float | None = None  # 5th percentile
    random_high: float | None = None  # 95th percentile


@dataclass
class Suggestions:
    size: int
    heterogeneity: Heterogeneity
    metric: StudyMetric | None
    nearest_metric: list[Item] = field(default_factory=list)
    nearest_euclid: list[Item] = field(default_factory=list)


def suggestions_cache_clear() -> None:
    """Forget the cached pool spreads and random-group calibrations (tests)."""
    _pool_spread_cache.clear()
    _random_cache.clear()


def _member_rows(study: Study, member_ids) -> np.ndarray:
    pool = study_pool(study=study)
    ids = np.unique(np.asarray(list(member_ids), dtype=np.int64))
    ids = ids[pool.contains(ids)]
    return pool.rows[np.searchsorted(pool.ids, ids)]


def _nearest(study: Study, centroid, factor, exclude_rows, k: int) -> list[int]:
    """Pool item ids nearest to ``centroid`` under ``factor`` (Euclid when None), chunked."""
    pool = study_pool(study=study)
    matrix = study.space.load_matrix()
    best_d = np.empty(0)
    best_i = np.empty(0, dtype=np.int64)
    centroid = centroid.astype(np.float32)
    w = None if factor is None else factor.astype(np.float32)
    for start in range(0, len(pool), CHUNK):
        rows = pool.rows[start : start + CHUNK]
        diff = np.asarray(matrix[rows], dtype=np.float32) - centroid
        if w is not None:
            diff = diff @ w
        d = np.einsum("ij,ij->i", diff, diff)
        d[np.isin(rows, exclude_rows)] = np.inf
        best_d = np.concatenate([best_d, d])
        best_i = np.concatenate([best_i, np.arange(start, start + rows.size)])
        if best_d.size > k:
            keep = np.argpartition(best_d, k)[:k]
            best_d, best_i = best_d[keep], best_i[keep]
    order = np.argsort(best_d, kind="stable")
    return [
        int(pool.ids[i])
        for i, d in zip(best_i[order], best_d[order], strict=True)
        if np.isfinite(d)
    ]


def _pool_spread(study: Study) -> float:
    """Mean Euclidean distance between random pool items (2,000 seeded pairs, cached)."""
    pool = study_pool(study=study)
    key = (study.pk, len(pool), study.space.sha256)
    if key not in _pool_spread_cache:
        rng = np.random.default_rng(study.pk)
        i = rng.integers(len(pool), size=2000)
        j = rng.integers(len(pool), size=2000)
        ok = i != j
        a, b = study.space.vectors(pool.rows[i[ok]]), study.space.vectors(pool.rows[j[ok]])
        _pool_spread_cache[key] = float(np.linalg.norm(a - b, axis=1).mean())
    return _pool_spread_cache[key]


def _outside_share(groups: np.ndarray, factor: np.ndarray, top: float) -> np.ndarray:
    """Per group (``groups``: g × n × d): the share of its variance outside the sensitive
    factors (nan for a group without variance)."""
    centred = groups - groups.mean(axis=1, keepdims=True)
    total = np.einsum("gij,gij->g", centred, centred)
    projected = centred @ factor
    kept = np.einsum("gij,gij->g", projected, projected)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, kept / (top * total), np.nan)


def _relative_spread(groups: np.ndarray, pool_spread: float) -> np.ndarray:
    return np.array([pdist(g).mean() for g in groups]) / (pool_spread or 1.0)


def _random_groups(study: Study, n: int) -> np.ndarray:
    """Vectors of random groups of ``n`` distinct pool items (g × n × d), seeded per study."""
    pool = study_pool(study=study)
    size = min(n, len(pool))
    count = int(np.clip(RANDOM_ROWS // max(size, 1), 20, RANDOM_GROUPS))
    rng = np.random.default_rng([study.pk, size])
    picks = np.stack([rng.choice(len(pool), size=size, replace=False) for _ in range(count)])
    vectors = study.space.vectors(pool.rows[picks.ravel()])
    return vectors.reshape(count, size, -1)


def _random_values(study: Study, n: int, method: str, face) -> np.ndarray:
    """The statistic of random groups of size ``n`` (cached per study, pool, size, metric)."""
    pool = study_pool(study=study)
    version = face.version_id if face is not None else None
    key = (study.pk, len(pool), study.space.sha256, n, method, version)
    if key not in _random_cache:
        groups = _random_groups(study, n)
        if method == "face-outside-share":
            top = float(np.linalg.norm(face.factor, ord=2) ** 2) or 1.0
            values = _outside_share(groups, face.factor, top)
        else:
            values = _relative_spread(groups, _pool_spread(study))
        values = values[np.isfinite(values)]
        if len(_random_cache) > 256:
            _random_cache.clear()
        _random_cache[key] = np.sort(values)
    return _random_cache[key]


def heterogeneity(*, study: Study, vectors: np.ndarray) -> Heterogeneity:
    n = len(vectors)
    if n < 2:
        return Heterogeneity("none", None, False, "Add at least two items to measure it.")
    centred = vectors - vectors.mean(axis=0)
    total = float(np.einsum("ij,ij->", centred, centred))
    face = current_metric(study_id=study.pk, method="face")
    if face is not None and total > 0:
        method = "face-outside-share"
        top = float(np.linalg.norm(face.factor, ord=2) ** 2) or 1.0
        value = float(_outside_share(vectors[None], face.factor, top)[0])
        meaning = (
            f"{value:.0%} of the differences between these {n} items lie outside the sensitive "
            f"factors of {face.label} (0: they differ only in what the metric ignores, as FACE "
            "assumes of a group; 1: only in what it keeps)"
        )
    else:
        face = None
        method = "relative-spread"
        value = float(pdist(vectors).mean()) / (_pool_spread(study) or 1.0)
        meaning = (
            f"the {n} members are on average {value:.0%} as far apart as two random items of "
            "the pool"
        )
    randoms = _random_values(study, n, method, face)
    if randoms.size == 0:
        return Heterogeneity(
            method, round(value, 3), False, f"Heterogeneity {value:.2f}: {meaning}."
        )
    share = float((np.searchsorted(randoms, value, side="right") + 1) / (randoms.size + 1))
    median, low, high = (float(q) for q in np.quantile(randoms, [0.5, 0.05, 0.95]))
    warn = share > WARN_RANDOM_SHARE
    verdict = (
        "so the group is not clearly more alike than a random draw; it may mix items that "
        "are not comparable."
        if warn
        else "so its members are much more alike than chance."
    )
    explanation = (
        f"Heterogeneity {value:.2f}: {meaning}. Random groups of {n} items from the pool score "
        f"{median:.2f} (90% between {low:.2f} and {high:.2f}); {share:.0%} of them are as "
        f"homogeneous as this group, {verdict}"
    )
    return Heterogeneity(
        method,
        round(value, 3),
        warn,
        explanation,
        random_share=round(share, 4),
        random_median=round(median, 3),
        random_low=round(low, 3),
        random_high=round(high, 3),
    )


def group_suggestions(*, study: Study, member_ids, k: int = 10) -> Suggestions:
    """Nearest pool items to the members' centroid, under the current metric and Euclid."""
    rows = _member_rows(study, member_ids)
    vectors = study.space.vectors(rows)
    result = Suggestions(
        size=int(rows.size),
        heterogeneity=heterogeneity(study=study, vectors=vectors),
        metric=current_metric(study_id=study.pk),
    )
    if rows.size == 0:
        return result
    centroid = vectors.mean(axis=0)
    euclid = _nearest(study, centroid, None, rows, k)
    learned = []
    if result.metric is not None:
        factor = result.metric.factor
        learned = _nearest(study, centroid, factor, rows, k)
    items = Item.objects.in_bulk(euclid + learned)
    result.nearest_euclid = [items[i] for i in euclid if i in items]
    result.nearest_metric = [items[i] for i in learned if i in items]
    return result
