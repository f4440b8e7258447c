"""Models to score counterfactual twins with: a logistic regression on a record space's φ, with
or without the one-hot columns of some fields (scikit-learn), scoring any table of records —
the study's own, or the twins file (``GET /api/studies/{id}/counterfactuals.csv``) — through
the stored feature map, as a team's model would.

Used by the twins' tests and ``benchmarks/counterfactual.py`` (docs/audit.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from spaces.models import EmbeddingSpace, Item
from spaces.records.featuremap import apply_feature_map


@dataclass(frozen=True)
class Fitted:
    model: LogisticRegression
    columns: np.ndarray  # φ's columns the model reads
    spec: dict  # the space's feature map
    leave_out: tuple[str, ...]

    def scores(self, frame: pd.DataFrame) -> np.ndarray:
        """P(positive) of each record of ``frame`` (the fields φ reads, as text or numbers)."""
        phi = apply_feature_map(self.spec, frame)
        return self.model.predict_proba(phi[:, self.columns])[:, 1]


def space_labels(space: EmbeddingSpace, label: str, positive) -> np.ndarray:
    """1 where the record's ``label`` field is ``positive``, in row order."""
    payloads = Item.objects.filter(space=space).order_by("row").values_list("payload", flat=True)
    return np.array([str(p[label]) == str(positive) for p in payloads], dtype=np.int64)


def fit_logistic(
    space: EmbeddingSpace, labels: np.ndarray, *, leave_out: tuple[str, ...] = ()
) -> Fitted:
    """A logistic regression on the space's φ, without the columns of the fields ``leave_out``
    (the one-hot ``field=…`` columns, or the numeric column ``field``)."""
    names = list(space.feature_map["feature_names"])
    keep = [
        i
        for i, name in enumerate(names)
        if not any(name == f or name.startswith(f"{f}=") for f in leave_out)
    ]
    matrix = np.asarray(space.load_matrix(), dtype=np.float64)[:, keep]
    model = LogisticRegression(max_iter=2000).fit(matrix, labels)
    return Fitted(model, np.array(keep), space.feature_map, tuple(leave_out))
