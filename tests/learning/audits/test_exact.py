"""The audit's neighbour search is exact on a real case, and so the audit is the exact one.

Records of UCI Adult's training file through the demo's φ (43 features, stored as float32 like
the demo's space), chosen to hold many exact duplicates (whole groups of identical records next
to a random sample), under the demo's gender-projected Σ and under the Euclidean metric:
``search.knn`` (distinct points, float32 candidates, certificate, float64 re-search where it
fails) gives exactly the neighbours and distances of a brute force over every pair in float64
(ties by index), and an audit run on ``search.knn`` gives the same violating pairs and the same
figures, intervals included, as one run on the brute force.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiments.adult.data import (
    CATEGORICAL,
    LABEL,
    NUMERIC,
    POSITIVE,
    adult_frame,
    gender_directions,
)
from experiments.adult.measures import project_out
from experiments.adult.scores import model_scores
from learning.audits import run, search
from learning.audits.inputs import Predictions
from learning.core.audit import metric_factor
from spaces.records.featuremap import apply_feature_map, build_feature_map

pytestmark = pytest.mark.slow
RANDOM, GROUPS = 2_500, 150  # random records, and the largest groups of identical records


K_MAX = 30
_BRUTE: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}


def brute_knn(points, k, *, threads=1, progress=None):
    """Every pair's float64 distance (the search's own formula), each row sorted by (distance,
    index), the point itself left out; the first ``k`` (of ``K_MAX``, computed once per array)."""
    x = np.ascontiguousarray(points, dtype=np.float64)
    key = x.tobytes()
    if key not in _BRUTE:
        n = x.shape[0]
        idx, dist = np.empty((n, K_MAX), dtype=np.int64), np.empty((n, K_MAX))
        everyone = np.arange(n)
        for start in range(0, n, 64):
            q = everyone[start : start + 64]
            d = search.pair_distances(x, np.repeat(q, n), np.tile(everyone, q.size))
            d = d.reshape(-1, n)
            d[np.arange(q.size), q] = np.inf
            order = np.lexsort((np.broadcast_to(everyone, d.shape), d), axis=-1)[:, :K_MAX]
            idx[q], dist[q] = order, np.take_along_axis(d, order, axis=1)
        _BRUTE[key] = idx, dist
    idx, dist = _BRUTE[key]
    return idx[:, :k], dist[:, :k]


@pytest.fixture(scope="module")
def adult() -> dict:
    frame = adult_frame("train")
    spec = build_feature_map(frame, numeric=NUMERIC, categorical=CATEGORICAL, excluded=[LABEL])
    vectors = apply_feature_map(spec, frame).astype(np.float32).astype(np.float64)
    _, group, counts = np.unique(vectors, axis=0, return_inverse=True, return_counts=True)
    biggest = np.argsort(-counts, kind="stable")[:GROUPS]
    rows = np.union1d(
        np.flatnonzero(np.isin(group.ravel(), biggest)),
        np.random.default_rng(0).choice(len(frame), RANDOM, replace=False),
    )
    x = vectors[rows]
    names = list(spec["feature_names"])
    directions, _ = gender_directions(vectors, names)
    sigma = project_out(np.eye(len(names)), directions)
    factor = metric_factor(sigma)  # as the audit factors it: the same Σ-points, bit for bit
    labels = (frame[LABEL].to_numpy()[rows] == POSITIVE).astype(np.int64)
    scores, _ = model_scores(x, labels, names, sex=True)
    return {"x": x, "factor": factor, "sigma": sigma, "scores": scores, "spec": spec}


def test_the_sample_holds_many_duplicates(adult):
    x = adult["x"]
    distinct = np.unique(x, axis=0).shape[0]
    assert x.shape[0] - distinct > 500  # so the search over distinct records is exercised


@pytest.mark.parametrize("metric", ["sigma", "euclidean"])
@pytest.mark.parametrize("k", [1, 10, K_MAX])
def test_neighbours_are_the_brute_force_ones(adult, metric, k):
    x = adult["x"] @ adult["factor"] if metric == "sigma" else adult["x"]
    idx, dist = search.knn(x, k, chunk=512)
    ref_idx, ref_dist = brute_knn(x, k)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_dist)  # the same bits


def test_the_audit_finds_the_same_violations_and_figures_as_on_the_brute_force(adult):
    n = adult["x"].shape[0]
    scores = adult["scores"]
    predictions = Predictions(
        item_ids=np.arange(1, n + 1),
        rows=np.arange(n),
        scores=scores,
        decisions=(scores >= 0.5).astype(np.int64),
        decision_labels=["<=50K", ">50K"],
        new_keys=[],
        new_vectors=np.zeros((0, adult["x"].shape[1])),
        new_records=[],
    )
    common = {
        "vectors": adult["x"],
        "sigma": adult["sigma"],
        "predictions": predictions,
        "method": "explore",
        "k": 10,
        "epsilon": None,
        "lipschitz": None,
        "spec": adult["spec"],
    }
    fast = run.audit_compute(**common)
    exact = run.audit_compute(**common, knn=brute_knn)
    assert fast.total_pairs == exact.total_pairs > 50
    for field in ("first", "second", "distance", "gap", "needed"):
        np.testing.assert_array_equal(getattr(fast.pairs, field), getattr(exact.pairs, field))
    np.testing.assert_array_equal(fast.ranks, exact.ranks)
    np.testing.assert_array_equal(fast.shares, exact.shares)
    fast.summary.pop("seconds"), exact.summary.pop("seconds")
    assert fast.summary == exact.summary  # every figure and interval, under Σ and Euclidean
