"""The numbers behind the version and drift pages, against known answers."""

from __future__ import annotations

import numpy as np
import pytest

from learning.evaluation import spectra
from learning.versions.drift import drift


def face(q: np.ndarray) -> np.ndarray:
    q, _ = np.linalg.qr(q)
    return np.eye(q.shape[0]) - q @ q.T


def test_face_sensitive_subspace_is_the_span_of_its_factors():
    rng = np.random.default_rng(0)
    factors = rng.normal(size=(12, 3))
    values, basis = spectra.sensitive_basis(spectra.spectrum(face(factors)))
    assert basis.shape == (12, 3)
    np.testing.assert_allclose(values, 0, atol=1e-12)
    projection = basis @ basis.T
    np.testing.assert_allclose(projection @ factors, factors, atol=1e-10)


def test_nested_face_subspaces_have_zero_angles_even_above_the_display_cap():
    rng = np.random.default_rng(1)
    factors = rng.normal(size=(40, 20))
    small, large = face(factors[:, :3]), face(factors)  # 3 directions inside 20
    moved = drift(small, large)
    assert moved.max_angle_degrees == pytest.approx(0, abs=1e-5)
    assert len(moved.angles_degrees) == 3
    assert moved.operator_norm == pytest.approx(1.0)  # a projection onto 17 more directions
    assert drift(small, np.eye(41)) is None  # different dimensions


def test_orthogonal_sensitive_directions_are_90_degrees_apart():
    sigma_x, sigma_y = face(np.eye(4)[:, :1]), face(np.eye(4)[:, 1:2])
    moved = drift(sigma_x, sigma_y)
    assert moved.max_angle_degrees == pytest.approx(90)
    assert moved.operator_norm == pytest.approx(1.0)
    assert moved.frobenius == pytest.approx(np.sqrt(2))


def test_aligned_rows_finds_the_rows_closest_to_each_direction():
    matrix = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [-3.0, 0.1], [0.0, 0.0]])
    basis = np.eye(2)
    found = spectra.aligned_rows(matrix, basis, top=2)
    assert [row for row, _ in found[0]] == [0, 3]  # |cos| 1 and 0.9994
    assert found[0][1][1] < 0  # the sign is kept
    assert [row for row, _ in found[1]] == [1, 2]
    assert spectra.aligned_rows(matrix, basis, rows=1, top=5)[1] == [(0, 0.0)]
