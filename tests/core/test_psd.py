"""PSD helpers: projection (with cap), square root, validation, signs, projectors."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learning.core.psd import (
    canonical_signs,
    is_psd,
    project_psd,
    projector,
    sqrtm_psd,
    symmetrize,
    validate_sigma,
)


def test_projection_is_nearest_psd_matrix_within_the_cap():
    rng = np.random.default_rng(0)
    a = symmetrize(rng.standard_normal((6, 6)) * 3)
    p = project_psd(a, max_eigenvalue=2.0)
    w = np.linalg.eigvalsh(p)
    assert w[0] >= -1e-12
    assert w[-1] <= 2.0 + 1e-12
    assert_allclose(project_psd(p, 2.0), p, atol=1e-12)  # idempotent
    for _ in range(50):  # no feasible matrix is closer
        g = rng.standard_normal((6, 6))
        b = project_psd(g @ g.T, 2.0)
        assert np.linalg.norm(a - p) <= np.linalg.norm(a - b) + 1e-12
    with pytest.raises(ValueError, match="positive"):
        project_psd(a, 0.0)


def test_sqrtm_squares_back_and_clips_rounding():
    rng = np.random.default_rng(1)
    g = rng.standard_normal((5, 3))
    a = g @ g.T  # rank 3
    r = sqrtm_psd(a)
    assert_allclose(r @ r, a, atol=1e-10)
    assert_allclose(r, r.T)


def test_validation_messages():
    assert_allclose(validate_sigma(np.eye(3)), np.eye(3))
    for bad, msg in [
        (np.ones((2, 3)), "square"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), "symmetric"),
        (np.diag([1.0, -1.0]), "semi-definite"),
        (np.diag([1.0, np.nan]), "NaN"),
    ]:
        with pytest.raises(ValueError, match=msg):
            validate_sigma(bad)
    with pytest.raises(ValueError, match="3×3"):
        validate_sigma(np.eye(2), 3)
    assert is_psd(np.eye(2))
    assert not is_psd(np.diag([1.0, -1.0]))


def test_canonical_signs_and_projector():
    v = np.array([[0.1, -0.9, 0.3], [-0.5, 0.2, 0.1]])
    c = canonical_signs(v)
    assert_allclose(c, [[-0.1, 0.9, -0.3], [0.5, -0.2, -0.1]])
    p = projector([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0]])  # dependent rows: a rank-1 projector
    assert_allclose(p, np.outer([1, 1, 0], [1, 1, 0]) / 2, atol=1e-12)
