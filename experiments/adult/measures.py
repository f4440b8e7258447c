"""The SenSR paper's measures of a classifier, and the projection of a sensitive subspace.

Definitions as in Yurochkin et al. 2020 (their code's ``get_metrics``/``get_consistency``),
the columns of the seed paper's Adult table:

* **B-Acc** — balanced accuracy, (TPR + TNR) / 2;
* **consistency** — the share of individuals whose prediction is the same for every
  counterfactual version of their record (S-Con: relationship set to ``Husband`` and to
  ``Wife``; GR-Con: the four combinations of binary gender and binary race);
* **Gap RMS / max** for a binary group attribute — with ``d_TPR`` and ``d_TNR`` the
  differences of the true positive and true negative rates between the two groups,
  ``sqrt((d_TPR² + d_TNR²) / 2)`` and ``max(|d_TPR|, |d_TNR|)``.

:func:`project_out` is the seed paper's ``Σ ← (I − P) Σ (I − P)`` with ``P`` the orthogonal
projector on the span of the sensitive directions. numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _rates(y: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    y, pred = np.asarray(y, dtype=bool), np.asarray(pred, dtype=bool)
    if not y.any() or y.all():
        raise ValueError("rates need both classes among the true labels")
    return float(pred[y].mean()), float((~pred[~y]).mean())


def balanced_accuracy(y, pred) -> float:
    """(TPR + TNR) / 2 of binary predictions."""
    tpr, tnr = _rates(y, pred)
    return (tpr + tnr) / 2


def rate_gaps(y, pred, group) -> tuple[float, float]:
    """(RMS gap, max gap) of the TPR and TNR between ``group`` True and False."""
    group = np.asarray(group, dtype=bool)
    y, pred = np.asarray(y, dtype=bool), np.asarray(pred, dtype=bool)
    tpr_1, tnr_1 = _rates(y[group], pred[group])
    tpr_0, tnr_0 = _rates(y[~group], pred[~group])
    d_tpr, d_tnr = tpr_1 - tpr_0, tnr_1 - tnr_0
    return float(np.sqrt((d_tpr**2 + d_tnr**2) / 2)), float(max(abs(d_tpr), abs(d_tnr)))


def consistency(predictions: Sequence) -> float:
    """Share of individuals (columns) predicted alike under every version (rows)."""
    table = np.asarray(predictions)
    if table.ndim != 2 or table.shape[0] < 2:
        raise ValueError("consistency needs at least two versions of the predictions")
    return float(np.all(table == table[0], axis=0).mean())


def sensitive_projector(directions) -> np.ndarray:
    """Orthogonal projector on the span of the rows of ``directions`` (d × d)."""
    directions = np.atleast_2d(np.asarray(directions, dtype=np.float64))
    u, s, _ = np.linalg.svd(directions.T, full_matrices=False)
    basis = u[:, s > s.max() * 1e-10]
    return basis @ basis.T


def project_out(sigma, directions) -> np.ndarray:
    """``(I − P) Σ (I − P)`` for ``P`` the projector on ``directions``' span (symmetrised)."""
    sigma = np.asarray(sigma, dtype=np.float64)
    keep = np.eye(sigma.shape[0]) - sensitive_projector(directions)
    projected = keep @ sigma @ keep
    return (projected + projected.T) / 2
