"""The SenSR paper's measures on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.adult.measures import (
    balanced_accuracy,
    consistency,
    project_out,
    rate_gaps,
    sensitive_projector,
)

# 8 people: true label, prediction, group (e.g. male)
Y = np.array([1, 1, 1, 0, 0, 0, 0, 1], bool)
PRED = np.array([1, 0, 1, 0, 1, 0, 0, 1], bool)
GROUP = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)


def test_balanced_accuracy_by_hand():
    # positives 0,1,2,7: predicted 1,0,1,1 -> TPR 3/4; negatives 3,4,5,6: 0,1,0,0 -> TNR 3/4
    assert balanced_accuracy(Y, PRED) == pytest.approx(0.75)
    assert balanced_accuracy([1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]) == pytest.approx(
        (1 + 0.25) / 2
    )


def test_rate_gaps_by_hand():
    # group 1 (0-3): TPR 2/3 (0,2 of 0,1,2), TNR 1/1; group 0 (4-7): TPR 1/1, TNR 2/3
    d_tpr, d_tnr = 2 / 3 - 1, 1 - 2 / 3
    rms, top = rate_gaps(Y, PRED, GROUP)
    assert rms == pytest.approx(np.sqrt((d_tpr**2 + d_tnr**2) / 2))
    assert top == pytest.approx(1 / 3)
    assert rate_gaps(Y, PRED, ~GROUP) == pytest.approx((rms, top))  # symmetric


def test_rates_need_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        balanced_accuracy([1, 1], [1, 0])


def test_consistency_counts_people_predicted_alike_in_every_version():
    husband = [1, 0, 1, 1, 0]
    wife = [1, 1, 1, 0, 0]
    assert consistency([husband, wife]) == pytest.approx(3 / 5)
    four = [[1, 0, 1], [1, 0, 1], [1, 1, 1], [1, 0, 1]]
    assert consistency(four) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        consistency([husband])


def test_projection_by_hand():
    sigma = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 5.0]])
    # project out e1: row and column 1 become zero, the rest is unchanged
    out = project_out(sigma, [[0.0, 1.0, 0.0]])
    np.testing.assert_allclose(out, [[2.0, 0, 0], [0, 0, 0], [0, 0, 5.0]])
    # a direction's length and a repeated direction do not matter
    np.testing.assert_allclose(project_out(sigma, [[0, 3.0, 0], [0, -1.0, 0]]), out)
    p = sensitive_projector([[1.0, 1.0, 0.0]])
    np.testing.assert_allclose(p, [[0.5, 0.5, 0], [0.5, 0.5, 0], [0, 0, 0]])
