"""The runs of the Adult table under a protocol: each choice the authors made, or today's.

:class:`Protocol` names the choices; its defaults are the authors' (the seed paper's EXPLORE +
SenSR script and SenSR's ``adult.py``):

* ``split`` — ``random``: each run draws a fresh random 80/20 split of both files (theirs);
  ``files``: the files' own train/test split, every run;
* ``directions`` — ``authors``: their two-class softmax regression's two weight vectors plus the
  gender and race axes, reduced by SVD; ``app``: the demo's logistic regression plus four
  one-hot axes (:mod:`experiments.adult.directions`);
* ``sigma`` — what the app publishes and SenSR gets: ``unprojected`` (EXPLORE's fit, as their
  script hands it) or ``projected`` (``(I − P) Σ̂ (I − P)`` by the chosen directions, as the
  paper's text and the demo);
* ``attack`` — ``two-stage``: their SenSR (:mod:`experiments.adult.twostage`: a free subspace
  attack along the sensitive directions, then a full attack under Σ); ``infairness``:
  inFairness's single-stage auditor (:mod:`experiments.adult.sensr`);
* ``divisor`` — their schedule with ``steps / divisor`` at ``lr × divisor`` (1 = theirs).

Each run re-learns what the authors re-learn: its split, the pairs, EXPLORE's Sigma — through
the app (:func:`experiments.adult.studies.run_study`: a record space, the pairs imported, the
refit service, a published version, downloaded through the export API) — and the directions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from experiments.adult.authors_explore import STEPS as AUTHORS_STEPS
from experiments.adult.authors_explore import heldout_check, proximal_explore
from experiments.adult.data import (
    GENDER_COLUMN,
    LABEL,
    N_COMPARABLE_PER_GROUP,
    N_INCOMPARABLE,
    POSITIVE,
    adult_both,
    adult_frame,
    adult_pairs,
)
from experiments.adult.data import random_split as split_rows
from experiments.adult.directions import STEPS as DIRECTION_STEPS
from experiments.adult.directions import (
    complement_projector,
    gender_weights,
    sensitive_directions,
)
from experiments.adult.sensr import TrainSettings, train_classifier
from experiments.adult.studies import run_study
from experiments.adult.table import ROWS, TABLE_ROWS, Downloaded, TestSet, download
from experiments.adult.twostage import AUTHORS, Schedule, train_networks
from spaces.records.featuremap import apply_feature_map

CHOICES = {
    "split": ("random", "files"),
    "directions": ("authors", "app"),
    "sigma": ("unprojected", "projected"),
    "attack": ("two-stage", "infairness"),
}
QUICK_ROWS = {"train": 3_000, "test": 1_500}
QUICK_PAIRS = 0.1
QUICK_DIRECTION_STEPS = 100
QUICK_AUTHORS_STEPS = 200
QUICK_SCHEDULE = {"steps": 6, "subspace_steps": 3, "full_steps": 2}


@dataclass(frozen=True)
class Protocol:
    split: str = "random"
    directions: str = "authors"
    sigma: str = "unprojected"
    attack: str = "two-stage"
    divisor: float = 1.0
    rows: tuple[str, ...] = TABLE_ROWS
    quick: bool = False
    device: str = "auto"
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"--{name} must be one of {', '.join(allowed)}")
        unknown = set(self.rows) - set(ROWS)
        if unknown or not self.rows:
            raise ValueError(f"rows must be among {', '.join(ROWS)}")
        if self.divisor <= 0:
            raise ValueError("the schedule divisor must be positive")

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "extra"}

    def schedule(self, row: str) -> Schedule:
        base = AUTHORS["baseline" if row in ("baseline", "project") else row.split("-")[0]]
        if self.quick:
            return replace(base, **QUICK_SCHEDULE)
        return base.scaled(self.divisor)


@dataclass
class Run:
    """One run's data: its records, their φ and test measures, and what SenSR gets."""

    seed: int
    x: dict[bool, np.ndarray]  # with / without gender
    y: np.ndarray
    tests: dict[bool, TestSet]
    directions: dict[bool, np.ndarray]
    sigma: dict[bool, np.ndarray]
    validity: dict[bool, dict | None] = field(default_factory=dict)  # the API's, per Sigma
    authors: tuple[np.ndarray, dict] | None = None  # the authors' EXPLORE: Σ and its validity


def run_frames(protocol: Protocol, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    if protocol.split == "random":
        train, test = split_rows(adult_both(), seed=seed)
    else:
        train, test = adult_frame("train"), adult_frame("test")
    if protocol.quick:
        train = train.sample(QUICK_ROWS["train"], random_state=seed).reset_index(drop=True)
        test = test.sample(QUICK_ROWS["test"], random_state=seed).reset_index(drop=True)
    return train, test


def study_name(protocol: Protocol, seed: int, gender: bool) -> str:
    kind = "quick, " if protocol.quick else ""
    split = "80/20 split" if protocol.split == "random" else "files' split"
    sigma = (
        "Sigma" if protocol.sigma == "unprojected" else f"Sigma, {protocol.directions}-projected"
    )
    return (
        f"UCI Adult table run {seed} ({kind}{split}, {'with' if gender else 'without'} gender, "
        f"{sigma})"
    )


Source = Callable[[Protocol, int, pd.DataFrame, list[bool]], list[Downloaded]]


def app_source(
    export: Callable[[list], object], log: Callable[[str], None] = lambda _: None
) -> Source:
    """Sigma as the app learns and serves it: each run's studies, then the export API.

    ``export(studies)`` is a context manager giving ``(base URL, token)`` that may export
    them (:func:`experiments.adult.table.local_export`).
    """

    def fetch(protocol: Protocol, seed: int, train: pd.DataFrame, genders: list[bool]):
        studies = [
            run_study(
                name=study_name(protocol, seed, gender),
                train=train,
                gender=gender,
                seed=seed,
                sigma=protocol.sigma,
                recipe=protocol.directions,
                pairs_scale=QUICK_PAIRS if protocol.quick else 1.0,
                log=log,
            )
            for gender in genders
        ]
        with export(studies) as (base_url, token):
            return [download(base_url=base_url, token=token, study_id=s.pk) for s in studies]

    return fetch


def prepare_run(protocol: Protocol, seed: int, fetch: Source, log: Callable[[str], None]) -> Run:
    """Split, the run's Sigma and φ (``fetch``), the test measures, the directions."""
    train, test = run_frames(protocol, seed)
    genders = [True] + ([False] if "explore-no-gender" in protocol.rows else [])
    got = dict(zip(genders, fetch(protocol, seed, train, genders), strict=True))
    female = (train[GENDER_COLUMN] == "Female").to_numpy()
    run = Run(seed, {}, (train[LABEL] == POSITIVE).to_numpy(), {}, {}, {})
    weights = None
    for gender, downloaded in got.items():
        spec = downloaded.feature_map
        names = list(spec["feature_names"])
        run.x[gender] = apply_feature_map(spec, train)
        run.tests[gender] = TestSet.of(test, spec)
        recipe = protocol.directions if gender else "authors"
        if recipe == "authors" and weights is None:  # one regression serves both φ
            steps = QUICK_DIRECTION_STEPS if protocol.quick else DIRECTION_STEPS
            weights = gender_weights(run.x[gender], names, female, seed=seed, steps=steps)
        run.directions[gender] = sensitive_directions(
            recipe, run.x[gender], names, female, seed=seed, weights=weights
        )
        run.sigma[gender] = downloaded.sigma
        run.validity[gender] = downloaded.metadata.get("validity")
    if "explore-authors" in protocol.rows:
        run.authors = authors_sigma(protocol, seed, train, run.x[True], log)
    return run


def authors_sigma(protocol: Protocol, seed: int, train: pd.DataFrame, x: np.ndarray, log):
    """The control: the authors' EXPLORE on the run's pairs (the ones its study imported) in
    the run's φ with gender — Σ from all of them, and its validity from a second fit on 80 %
    scored on the other 20 % (:mod:`experiments.adult.authors_explore`)."""
    scale = QUICK_PAIRS if protocol.quick else 1.0
    pairs, comparable = adult_pairs(
        (train[LABEL] == POSITIVE).to_numpy(),
        (train[GENDER_COLUMN] == "Female").to_numpy(),
        seed=seed,
        n_comparable_per_group=round(N_COMPARABLE_PER_GROUP * scale),
        n_incomparable=round(N_INCOMPARABLE * scale),
    )
    z = x[pairs[:, 0]] - x[pairs[:, 1]]
    steps = QUICK_AUTHORS_STEPS if protocol.quick else AUTHORS_STEPS

    def fit(zs, labels):
        return proximal_explore(zs, labels, steps=steps, seed=seed)

    _, held = heldout_check(z, comparable, fit, seed=seed)
    log(f"run {seed}: the authors' EXPLORE, {held.line()}")
    return fit(z, comparable), held.validity()


def _row_inputs(row: str, runs: list[Run]):
    gender = row != "explore-no-gender"
    xs = [run.x[gender] for run in runs]
    if row == "baseline":
        return gender, xs, None, None
    directions = [run.directions[gender] for run in runs]
    if row == "project":  # the data with the directions projected out, trained as the baseline
        keeps = [complement_projector(d) for d in directions]
        return gender, [x @ k for x, k in zip(xs, keeps, strict=True)], None, None
    if row == "sensr":
        sigmas = [complement_projector(d) for d in directions]
    elif row == "explore-authors":
        sigmas = [run.authors[0] for run in runs]
    else:
        sigmas = [run.sigma[gender] for run in runs]
    return gender, xs, directions, sigmas


def _projected(predict, keep: np.ndarray):
    return lambda x: predict(x @ keep)


def train_row(
    protocol: Protocol, row: str, runs: list[Run], log: Callable[[str], None]
) -> np.ndarray:
    """(runs, 7): the row's classifiers, one per run, measured on each run's test records."""
    gender, xs, directions, sigmas = _row_inputs(row, runs)
    ys = [run.y for run in runs]
    if protocol.attack == "two-stage":
        predictors = train_networks(
            xs,
            ys,
            schedule=protocol.schedule(row),
            seeds=[run.seed for run in runs],
            directions=directions,
            sigmas=sigmas,
            device=protocol.device,
            log=lambda line: log(f"{ROWS[row]}: {line}"),
        )
    else:
        settings = TrainSettings(**(QUICK_SCHEDULE_INFAIRNESS if protocol.quick else {}))
        predictors = [
            train_classifier(x, y, seed=run.seed, settings=settings, sigma=sigma)
            for x, y, run, sigma in zip(xs, ys, runs, sigmas or [None] * len(runs), strict=True)
        ]
    if row == "project":  # the test records are projected as the training ones were
        keeps = [complement_projector(run.directions[gender]) for run in runs]
        predictors = [_projected(p, k) for p, k in zip(predictors, keeps, strict=True)]
    measured = [run.tests[gender].measure(p) for run, p in zip(runs, predictors, strict=True)]
    for run, values in zip(runs, measured, strict=True):
        log(f"run {run.seed} {ROWS[row]}: " + " ".join(f"{v:.3f}" for v in values))
    return np.array(measured)


QUICK_SCHEDULE_INFAIRNESS = {"steps": 20, "auditor_nsteps": 3}


def row_validity(row: str, runs: list[Run]) -> list[dict | None]:
    """The validity of each run's learned Sigma in ``row`` (as the export API gave it); empty
    for the rows that use none (the baseline, SenSR's own metric)."""
    if row in ("baseline", "sensr", "project"):
        return []
    if row == "explore-authors":
        return [run.authors[1] for run in runs]
    gender = row != "explore-no-gender"
    return [run.validity.get(gender) for run in runs]


def run_table(
    protocol: Protocol,
    seeds: list[int],
    fetch: Source,
    log: Callable[[str], None] = lambda _: None,
) -> tuple[dict[str, np.ndarray], dict[str, list[dict | None]]]:
    """``{row: (runs, 7)}`` for the protocol's rows over the runs ``seeds``, and
    ``{row: [validity of each run's Sigma]}`` (:func:`row_validity`)."""
    runs = [prepare_run(protocol, seed, fetch, log) for seed in seeds]
    log(f"{len(runs)} run(s) prepared")
    results = {row: train_row(protocol, row, runs, log) for row in protocol.rows}
    return results, {row: row_validity(row, runs) for row in protocol.rows}
