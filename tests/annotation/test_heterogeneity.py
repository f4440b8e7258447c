"""The heterogeneity indicator is read against random groups of the same size from the pool
(annotation.groups.suggestions.heterogeneity): a tight group does not warn even when its raw number
is high, a random draw of the pool does."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.groups.suggestions import WARN_RANDOM_SHARE, heterogeneity
from learning.models import MetricVersion

from .factories import make_metric_version

pytestmark = pytest.mark.django_db


def measure(study, rows):
    return heterogeneity(study=study, vectors=study.space.vectors(rows))


def test_without_a_face_version_a_tight_group_passes_and_a_random_draw_warns(study, items):
    matrix = study.space.load_matrix(mmap=False).astype(np.float64)
    tight = np.argsort(np.linalg.norm(matrix - matrix[0], axis=1))[:4]  # item 0's neighbours
    h = measure(study, tight)
    assert h.method == "relative-spread"
    assert h.random_share <= WARN_RANDOM_SHARE
    assert h.warn is False
    assert h.value < h.random_low <= h.random_median <= h.random_high
    assert "Random groups of 4 items from the pool" in h.explanation

    drawn = np.random.default_rng(5).choice(len(items), 4, replace=False)
    h = measure(study, drawn)
    assert h.random_share > WARN_RANDOM_SHARE
    assert h.warn is True
    assert h.random_low <= h.value <= h.random_high
    assert "not clearly more alike than a random draw" in h.explanation


def test_under_face_a_high_share_is_no_warning_when_random_groups_score_higher(study, items):
    """The issue's case: a fixed threshold (0.6) warned on a group that is much more
    homogeneous than random groups of its size, whose share outside one sensitive factor of 8
    dimensions is ~0.9."""
    d = study.space.dimension
    q = np.zeros((d, 1))
    q[0, 0] = 1.0
    make_metric_version(
        study=study, method=MetricVersion.Method.FACE, sigma=np.eye(d) - q @ q.T, label="face-1"
    )
    matrix = study.space.load_matrix(mmap=False).astype(np.float64)
    # Members far apart along the sensitive factor, close in the others.
    score = (
        np.abs(matrix[:, 0]) + np.abs(matrix[:, 1]) - 0.5 * np.linalg.norm(matrix[:, 2:], axis=1)
    )
    group = np.argsort(-score)[:4]
    h = measure(study, group)
    assert h.method == "face-outside-share"
    centred = matrix[group] - matrix[group].mean(axis=0)
    assert h.value == pytest.approx((centred[:, 1:] ** 2).sum() / (centred**2).sum(), abs=1e-3)
    assert h.value > 0.6  # the old fixed threshold would have warned
    assert h.random_median > h.value
    assert h.random_share <= WARN_RANDOM_SHARE
    assert h.warn is False
    assert "outside the sensitive factors of face-1" in h.explanation

    drawn = np.random.default_rng(5).choice(len(items), 4, replace=False)
    assert measure(study, drawn).warn is True


def test_one_item_has_no_heterogeneity(study):
    h = measure(study, [0])
    assert (h.value, h.warn, h.random_share) == (None, False, None)
