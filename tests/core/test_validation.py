"""The input checks FACE and EXPLORE share (learning/core/_validation.py): one bad matrix, one
refusal, in the same words from both estimators."""

from __future__ import annotations

import numpy as np
import pytest

from learning.core.explore import EXPLORE
from learning.core.face import FACE


def _with(value):
    x = np.random.default_rng(0).standard_normal((30, 3))
    x[7, 1] = value
    return x


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros(30), "{name} must be a 2-D array (n, d), got shape (30,)"),
        (np.zeros((30, 3, 1)), "{name} must be a 2-D array (n, d), got shape (30, 3, 1)"),
        (np.zeros((0, 3)), "{name} is empty (shape (0, 3))"),
        (np.zeros((30, 0)), "{name} is empty (shape (30, 0))"),
        (np.ones((30, 3)) + 1j, "{name} must be real-valued"),
        (np.full((30, 3), "a"), "{name} must be real-valued"),
        (_with(np.nan), "{name} contains NaN or inf"),
        (_with(np.inf), "{name} contains NaN or inf"),
        (_with(-np.inf), "{name} contains NaN or inf"),
    ],
)
def test_face_and_explore_refuse_a_bad_matrix_in_the_same_words(bad, message):
    y = np.arange(30) % 2
    with pytest.raises(ValueError) as by_explore:
        EXPLORE().fit_differences(bad, y)
    with pytest.raises(ValueError) as by_face:
        FACE().fit(bad, [np.array([0, 1])])
    assert str(by_explore.value) == message.format(name="Z")
    # FACE adds why a row outside every group counts too
    face_message = message.format(name="X")
    if "NaN" in message:
        face_message += " (every row is checked, grouped or not)"
    assert str(by_face.value) == face_message


def test_face_keeps_float32_rows_and_explore_works_in_float64():
    x = np.random.default_rng(1).standard_normal((40, 3)).astype(np.float32)
    face = FACE().fit(x, [np.arange(20), np.arange(20, 40)])
    assert face.precision_ == "mixed"  # the shared check did not cast X
    y = np.arange(40) % 2
    model = EXPLORE(alpha=0.1).fit_differences(x, y)
    assert model.sigma_.dtype == np.float64
