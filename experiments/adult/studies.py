"""Adult studies through the app: the pieces the demo and the table's runs share.

A study's metric is learned as a user's would be: the records become a record space
(:func:`spaces.records.create.record_space_create`), the seed paper's pairs are imported as
feedback (:func:`annotation.setup.feedback_import.feedback_import`), the worker's refit service
(:func:`learning.refits.service.refit_study`) fits EXPLORE, and a version is published for the
export API. :func:`run_study` does this for one run of the table (its own random split, with or
without the gender columns in φ) and publishes the fit as the authors hand it to SenSR —
unprojected — or projected as the demo's. Idempotent: a run's study, found by name, is reused.
"""

from __future__ import annotations

import csv
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from django.db import transaction

from annotation.models import PairJudgment, Source, Study
from annotation.setup.feedback_import import feedback_import
from experiments.adult.data import (
    CATEGORICAL,
    GENDER_COLUMN,
    LABEL,
    N_COMPARABLE_PER_GROUP,
    N_INCOMPARABLE,
    NUMERIC,
    POSITIVE,
    adult_pairs,
)
from experiments.adult.directions import sensitive_directions
from experiments.adult.measures import project_out, sensitive_projector
from experiments.glove_demo import demo_study
from learning.core.psd import Congruence
from learning.models import MetricVersion
from learning.refits import service, snapshots
from learning.versions import selectors, storage
from learning.versions.sigmas import sigma_of
from learning.versions.validity import (
    INFORMATIVE,
    REASON_MAX_CHARS,
    validity_of,
    verdict_line,
)
from spaces.models import EmbeddingSpace, Item
from spaces.records.create import record_space_create

REFIT_WAIT_SECONDS = 300
RUN_INSTRUCTIONS = "One run of the Adult table (reproduce_adult_table): the seed paper's pairs."
SIGMAS = ("unprojected", "projected")


def space_records(space: EmbeddingSpace) -> tuple[list[str], list[dict]]:
    rows = Item.objects.filter(space=space).order_by("row").values_list("key", "payload")
    keys, payloads = zip(*rows, strict=True) if rows else ((), ())
    return list(keys), list(payloads)


def pairs_import(
    study: Study,
    payloads: list[dict],
    keys: list[str],
    *,
    seed: int,
    provenance: str,
    created: list[str],
    n_comparable_per_group: int = N_COMPARABLE_PER_GROUP,
    n_incomparable: int = N_INCOMPARABLE,
) -> None:
    """Import the seed paper's pairs over the space's records as feedback (once)."""
    if PairJudgment.objects.filter(
        study=study, source=Source.IMPORTED, provenance=provenance
    ).exists():
        return
    income = np.array([p[LABEL] == POSITIVE for p in payloads])
    female = np.array([p[GENDER_COLUMN] == "Female" for p in payloads])
    pairs, comparable = adult_pairs(
        income,
        female,
        seed=seed,
        n_comparable_per_group=n_comparable_per_group,
        n_incomparable=n_incomparable,
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "adult_pairs.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["key_a", "key_b", "label"])
            for (a, b), same in zip(pairs, comparable, strict=True):
                writer.writerow([keys[a], keys[b], "comparable" if same else "incomparable"])
        summary = feedback_import(
            study=study, path=path, kind="pairs", fmt="csv", provenance=provenance
        )
    created.append(f"{summary.judgments:,} imported pair judgments")


def fitted_version(study: Study, log: Callable[[str], None]) -> MetricVersion:
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


def projected_version_find(
    study: Study, fitted: MetricVersion, *, label: str, match: dict | None = None
) -> MetricVersion | None:
    """The newest ready version ``label`` of ``fitted`` whose parameters contain ``match``
    (compared here, not in SQL: SQLite has no JSON containment; a parent has few such versions)."""
    versions = MetricVersion.objects.ready().filter(study=study, label=label, parent=fitted)
    for version in versions.order_by("-id"):
        if match is None or _contains(version.parameters, match):
            return version
    return None


def _contains(value, part) -> bool:
    """JSON containment as PostgreSQL's ``@>`` decides it, for objects and scalars."""
    if isinstance(part, dict):
        return isinstance(value, dict) and all(
            key in value and _contains(value[key], sub) for key, sub in part.items()
        )
    return value == part


def projected_version(
    study: Study,
    fitted: MetricVersion,
    *,
    label: str,
    directions: np.ndarray,
    info: dict,
    created: list[str],
    match: dict | None = None,
) -> MetricVersion:
    """A new EXPLORE version ``(I − P) Σ̂ (I − P)`` of ``fitted`` (once per label, parent, match)."""
    existing = projected_version_find(study, fitted, label=label, match=match)
    if existing is not None:
        return existing
    version = storage.metric_version_create(
        study=study,
        method=MetricVersion.Method.EXPLORE,
        sigma=project_out(sigma_of(fitted), directions),
        label=label,
        parameters={
            "source_version": fitted.pk,
            "projection": "Sigma <- (I - P) Sigma (I - P), P the projector on the span of the "
            "sensitive directions (the seed paper, after SenSR)",
            "feature_names": list(study.space.feature_map["feature_names"]),
            **info,
        },
        counts=fitted.counts,
        diagnostics={"source_spectrum": fitted.diagnostics.get("spectrum")},
        judgment_watermark=fitted.judgment_watermark,
        group_watermark=fitted.group_watermark,
        parent=fitted,
        # judged by the same projection of each of the fit's new-items fold fits (kept as data:
        # the audits' bootstrap applies it to the fit's refits)
        derive=Congruence(np.eye(study.space.dimension) - sensitive_projector(directions)),
    )
    created.append(f"EXPLORE version #{version.pk} ({label}, from #{fitted.pk})")
    return version


def publish_reason(version: MetricVersion, *, context: str) -> str:
    """Why ``version`` is published although it is not informative: ``context``, its verdict
    and, for a derived version, the verdict of the fit it comes from — each with its figures."""
    reason = f"{context}. This version's verdict: {verdict_line(validity_of(version))}"
    if version.parent is not None:
        source = verdict_line(validity_of(version.parent), needs=False)
        reason += f"; the EXPLORE fit it projects (#{version.parent_id}): {source}"
    reason += " — published to reproduce the paper, see docs/adult.md"
    return reason[:REASON_MAX_CHARS]


def publish_or_explain(
    version: MetricVersion, *, context: str, by: str, created: list[str]
) -> MetricVersion:
    """Publish ``version`` (if it is not already, or if it is without the override its verdict
    needs), with :func:`publish_reason` recorded when its verdict is not informative."""
    validity = validity_of(version)
    informative = validity["verdict"] == INFORMATIVE
    if version.is_published and (informative or validity["override"] is not None):
        return version
    reason = "" if informative else publish_reason(version, context=context)
    version = storage.version_publish(version_id=version.pk, user=None, reason=reason, by=by)
    created.append(
        f"published EXPLORE version #{version.pk} ({validity['verdict']}"
        + ("" if informative else ", with the reason recorded")
        + ")"
    )
    return version


def space_vectors(space: EmbeddingSpace) -> np.ndarray:
    return np.asarray(space.vectors(np.arange(space.item_count)), dtype=np.float64)


def run_study(
    *,
    name: str,
    train: pd.DataFrame,
    gender: bool,
    seed: int,
    sigma: str,
    recipe: str,
    pairs_scale: float = 1.0,
    log: Callable[[str], None] = lambda _: None,
) -> Study:
    """One run's study on its training records, its EXPLORE fit published as ``sigma`` says."""
    if sigma not in SIGMAS:
        raise ValueError(f"unknown Sigma {sigma!r}; choose one of {', '.join(SIGMAS)}")
    created: list[str] = []
    space = EmbeddingSpace.objects.filter(name=name).first()
    if space is None:
        space = record_space_create(
            name=name,
            frame=train,
            numeric=NUMERIC,
            categorical=CATEGORICAL if gender else [c for c in CATEGORICAL if c != GENDER_COLUMN],
            excluded=[] if gender else [GENDER_COLUMN],
            label_column=LABEL,
            key_column="key",
            source=f"UCI Adult, both files, a random 80 % of the rows (seed {seed}); "
            "experiments/adult/data.py",
        )
        created.append(f"record space {name!r}")
    with transaction.atomic():
        study = demo_study(
            name=name,
            space=space,
            mode=Study.Mode.PAIRS,
            instructions=RUN_INSTRUCTIONS,
            users=None,
            created=created,
        )
        learning = selectors.learning_settings_get(study_id=study.pk)
        if learning.fit_face:
            learning.fit_face = False
            learning.save(update_fields=["fit_face"])
    keys, payloads = space_records(space)
    pairs_import(
        study,
        payloads,
        keys,
        seed=seed,
        provenance=f"the seed paper's Adult pairs, seed {seed}, scale {pairs_scale:g}",
        created=created,
        n_comparable_per_group=round(N_COMPARABLE_PER_GROUP * pairs_scale),
        n_incomparable=round(N_INCOMPARABLE * pairs_scale),
    )
    version = fitted_version(study, log)
    if sigma == "projected":
        names = list(space.feature_map["feature_names"])
        female = np.array([p[GENDER_COLUMN] == "Female" for p in payloads])
        directions = sensitive_directions(recipe, space_vectors(space), names, female, seed=seed)
        version = projected_version(
            study,
            version,
            label=f"explore-{recipe}-out",
            directions=directions,
            info={"sensitive_directions": directions.tolist(), "recipe": recipe},
            created=created,
        )
    publish_or_explain(
        version,
        context=f"one run of the seed paper's Adult table (reproduce_adult_table, seed {seed})",
        by="reproduce_adult_table",
        created=created,
    )
    for line in created:
        log(f"{name}: {line}")
    return study
