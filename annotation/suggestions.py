"""Group curation helpers: items nearest to a group's centroid, and a heterogeneity indicator.

Heterogeneity (FACE is biased when a group's members differ in relevant attributes):

* with a ready FACE version of the study (``Sigma = I - Q Q^T``, ``Q`` the top-k sensitive
  factors): the **share of the group's within-group variance outside the sensitive factors**,
  ``||C W||^2 / (lambda_max(Sigma) ||C||^2)`` with ``C`` the centred member vectors and
  ``Sigma = W W^T``. 0 means the members differ only along the sensitive factors (what FACE
  assumes); 1 means all their differences are ones the metric keeps. Warn above
  ``FACE_WARN``.
* without one: the **relative spread**, the mean pairwise Euclidean distance within the group
  divided by the mean distance between random items of the pool. Near 1 the group is as
  spread out as random items. Warn above ``SPREAD_WARN``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.distance import pdist

from spaces.models import Item

from .hooks import StudyMetric, current_metric
from .models import Study
from .selectors import study_pool

FACE_WARN = 0.6
SPREAD_WARN = 0.9
CHUNK = 65536
_pool_spread_cache: dict[tuple, float] = {}


@dataclass(frozen=True)
class Heterogeneity:
    method: str  # face-outside-share | relative-spread | none
    value: float | None
    warn: bool
    explanation: str


@dataclass
class Suggestions:
    size: int
    heterogeneity: Heterogeneity
    metric: StudyMetric | None
    nearest_metric: list[Item] = field(default_factory=list)
    nearest_euclid: list[Item] = field(default_factory=list)


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


def heterogeneity(*, study: Study, vectors: np.ndarray) -> Heterogeneity:
    n = len(vectors)
    if n < 2:
        return Heterogeneity("none", None, False, "Add at least two items to measure it.")
    centred = vectors - vectors.mean(axis=0)
    total = float(np.einsum("ij,ij->", centred, centred))
    face = current_metric(study_id=study.pk, method="face")
    if face is not None and total > 0:
        factor = face.factor
        top = float(np.linalg.norm(factor, ord=2) ** 2) or 1.0
        projected = centred @ factor
        share = float(np.einsum("ij,ij->", projected, projected)) / (top * total)
        return Heterogeneity(
            "face-outside-share",
            round(share, 3),
            share > FACE_WARN,
            f"{share:.0%} of the differences between these items lie outside the sensitive "
            f"factors of {face.label}"
            + (
                "; the group may mix items that differ in relevant ways."
                if share > FACE_WARN
                else "."
            ),
        )
    spread = float(pdist(vectors).mean()) / (_pool_spread(study) or 1.0)
    return Heterogeneity(
        "relative-spread",
        round(spread, 3),
        spread > SPREAD_WARN,
        f"The members are {spread:.0%} as far apart as random items of the pool"
        + ("; the group may mix items that are not comparable." if spread > SPREAD_WARN else "."),
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
