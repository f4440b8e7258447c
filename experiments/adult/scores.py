"""Score files of income models for the Adult demo study, to audit (docs/audit.md).

Two logistic regressions (scikit-learn, no PyTorch) trained on the demo's records — the
training file's 30,162 people, φ as the demo's record space stores it — to predict
``income > 50K``:

* ``logreg-with-sex``: every feature of φ, the two ``sex=`` columns included;
* ``logreg-without-sex``: the same model with the ``sex=`` columns left out ("fairness through
  unawareness").

Each writes ``<name>.csv`` with ``key,score,decision``: the model's probability of ``>50K`` and
its decision at ½ (``>50K`` / ``<=50K``), one row per record of the study. The Adult table's
SenSR models may add their scores here later (a function per model, same columns).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from experiments.adult.data import GENDER_COLUMN, LABEL, POSITIVE
from spaces.models import EmbeddingSpace, Item

MODELS = ("logreg-with-sex", "logreg-without-sex")


@dataclass(frozen=True)
class ScoreFile:
    name: str
    path: Path
    rows: int
    accuracy: float
    uses: str


def space_records(space: EmbeddingSpace) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The space's keys (row order), φ matrix and the income labels (1 for >50K)."""
    rows = Item.objects.filter(space=space).order_by("row").values_list("key", "payload")
    keys = [key for key, _ in rows]
    labels = np.array([payload[LABEL] == POSITIVE for _, payload in rows], dtype=np.int64)
    matrix = np.asarray(space.load_matrix(), dtype=np.float64)
    return keys, matrix, labels


def model_scores(matrix: np.ndarray, labels: np.ndarray, names: list[str], *, sex: bool):
    """A logistic regression's probabilities of >50K, with or without the sex columns."""
    columns = [i for i, n in enumerate(names) if sex or not n.startswith(f"{GENDER_COLUMN}=")]
    model = LogisticRegression(max_iter=2000).fit(matrix[:, columns], labels)
    scores = model.predict_proba(matrix[:, columns])[:, 1]
    return scores, float(((scores >= 0.5) == labels).mean())


def write_scores(path: Path, keys: list[str], scores: np.ndarray) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "score", "decision"])
        for key, score in zip(keys, scores.tolist(), strict=True):
            writer.writerow([key, f"{score:.6f}", POSITIVE if score >= 0.5 else "<=50K"])


def adult_score_files(*, space: EmbeddingSpace, folder: Path) -> list[ScoreFile]:
    """Write both models' score files into ``folder``; returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    keys, matrix, labels = space_records(space)
    names = list(space.feature_map["feature_names"])
    written = []
    for name in MODELS:
        with_sex = name == "logreg-with-sex"
        scores, accuracy = model_scores(matrix, labels, names, sex=with_sex)
        path = folder / f"{name}.csv"
        write_scores(path, keys, scores)
        uses = "all 43 features" if with_sex else "every feature but sex"
        written.append(ScoreFile(name, path, len(keys), accuracy, uses))
    return written
