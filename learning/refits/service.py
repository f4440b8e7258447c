"""Writes for learning: refit a study into new metric versions, evaluate them, publish one.

``refit_study`` runs in a Celery worker (``learning.tasks``). It holds the study's lease (one
refit per study), snapshots the data up to a watermark, fits each enabled method whose input
changed (:mod:`learning.refits.fitting`), stores every version through :mod:`learning.versions.storage`
(``fitting`` row, Sigma on disk, ``ready``), evaluates it (:mod:`learning.evaluation.checks`, which
returns whether the study's auto-publish checks passed) and publishes it when they did.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

import numpy as np
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.utils import timezone
from threadpoolctl import threadpool_limits

from annotation.labelling.strategies import control_only
from annotation.models import Adjudication, Study
from learning.evaluation.checks import version_evaluate
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import cache, face_fits, fitting, increments, scheduling, snapshots
from learning.refits import newitems as newitems
from learning.versions import selectors, sigmas, storage

logger = logging.getLogger(__name__)
Method = MetricVersion.Method

TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)
BUSY_RETRY_MAX = 5.0  # seconds
WAITING_SEPARATOR = " | "  # between the methods' reasons in RefitState.last_outcome
QUIET_MARGIN = 0.2  # seconds after the study turns quiet that a waiting refit comes back


class Outcome(StrEnum):
    BUSY = "busy"  # another refit of the study holds its lease
    NOTHING_NEW = "nothing new"
    WAITING = "waiting"  # a burst goes on and its answers are not yet worth a version
    FITTED = "fitted"


@dataclass
class RefitReport:
    """What one refit did."""

    study_id: int
    outcome: Outcome
    retry_in: float = 0.0  # busy: when the lease may be free; waiting: when the study is quiet
    ready: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    published: list[int] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # why a method waits for more data


def refit_study(*, study_id: int) -> RefitReport:
    """Refit ``study_id`` if its data or learning settings changed since its live versions.

    Raises ``Study.DoesNotExist`` for a deleted study.
    """
    if not Study.objects.filter(pk=study_id).exists():
        raise Study.DoesNotExist(f"study {study_id} does not exist")
    scheduling.refit_clear_due(study_id=study_id)
    token = scheduling.lease_claim(study_id=study_id)
    if token is None:
        # Retry soon (the running refit may end long before its renewed lease would expire).
        remaining = scheduling.lease_remaining(study_id=study_id)
        return RefitReport(
            study_id=study_id,
            outcome=Outcome.BUSY,
            retry_in=min(max(1.0, remaining), BUSY_RETRY_MAX),
        )
    report = RefitReport(study_id=study_id, outcome=Outcome.NOTHING_NEW)
    try:
        with (
            scheduling.LeaseKeeper(study_id, token),
            threadpool_limits(settings.LEARNING_BLAS_THREADS),
        ):
            _refit_claimed(study_id, report)
    finally:
        summary = f"{report.outcome}: ready {report.ready} failed {report.failed}"
        if report.waiting:
            summary = f"{report.outcome}: {WAITING_SEPARATOR.join(report.waiting)}"
        try:
            scheduling.lease_release(study_id=study_id, token=token, outcome=summary)
        except DatabaseError:
            logger.warning("could not release the refit lease of study %s", study_id)
    if report.outcome == Outcome.WAITING:
        # Come back when the burst is over (a marker that is set already covers it; a down
        # broker leaves it to the sweep).
        scheduling.refit_mark_due(study_id=study_id, debounce=report.retry_in + QUIET_MARGIN)
    return report


@dataclass(frozen=True)
class MethodPlan:
    label: str
    parameters: dict
    fingerprint: str
    group_watermark: int | None  # None: groups are not used


def _plan(method: str, label: str, params: dict, marks, group_watermark) -> MethodPlan:
    fingerprint = storage.version_fingerprint(
        method=method, label=label, parameters=params, judgment_count=marks.judgment_count
    )
    return MethodPlan(label, params, fingerprint, group_watermark)


def _method_plans(
    learning: StudyLearningSettings, excluded: list[int], marks: snapshots.DataMarks
) -> dict[str, MethodPlan]:
    """Per enabled method: its label, parameters, fingerprint and the group watermark."""
    common = {
        "repeat_policy": learning.repeat_policy,
        "excluded_annotators": excluded,
        "validation_share": learning.validation_share,
    }
    if marks.adjudications:  # adjudicated labels read in place of answers (absent: none)
        common["adjudications"] = marks.adjudications
    plans = {}
    # FACE first: its new Sigma is EXPLORE's prior in the same refit.
    uses_pairs = learning.face_pairs_as_groups and marks.judgment_count > 0
    if learning.fit_face and (marks.group_watermark or uses_pairs):
        params = common | {
            "n_components": learning.face_components,
            "pairs_as_groups": learning.face_pairs_as_groups,
        }
        k = learning.face_components
        label = f"face-{k if k is not None else 'auto'}"
        plans[Method.FACE] = _plan(Method.FACE, label, params, marks, marks.group_watermark)
    if learning.fit_explore and marks.judgment_count:
        params = common | {"max_eigenvalue": learning.explore_max_eigenvalue}
        if learning.weight_by_reliability:  # (absent when off: older fingerprints still hold)
            params["weight_by_reliability"] = True
        plans[Method.EXPLORE] = _plan(Method.EXPLORE, "explore", params, marks, None)
    return plans


def _waits(method: str, plan: MethodPlan, marks, learning, now, quiet_in: float) -> str:
    """Why new data is not yet worth a new version of ``method`` during a burst ("" when it is).

    The churn rule, which limits versions while answers keep coming: a version is worth it when
    there is none yet, when the settings or the groups changed, when at least
    ``version_min_new_answers`` answers came (or went) since the method's last version, or when
    ``version_min_minutes`` passed since it. The caller asks only while the burst goes on
    (``quiet_in`` > 0, seconds until the study has been quiet for its debounce window); a quiet
    study's answers always get a version, and a waiting refit re-queues itself for that moment.
    """
    latest = selectors.version_latest_live(study_id=learning.study_id, method=method)
    if latest is None or latest.status == MetricVersion.Status.FITTING:
        return ""
    if plan.group_watermark is not None and plan.group_watermark != latest.group_watermark:
        return ""
    counted = int(latest.counts.get("judgments_total") or 0)
    # The same settings, the decisions aside: adjudications made since are new data, counted
    # like answers (each decision starting a version was how versions piled up).
    then = (latest.parameters or {}).get("adjudications", "")
    parameters = {k: v for k, v in plan.parameters.items() if k != "adjudications"}
    same_settings = latest.fingerprint == storage.version_fingerprint(
        method=method,
        label=plan.label,
        parameters=parameters | ({"adjudications": then} if then else {}),
        judgment_count=counted,
    )
    if not same_settings:
        return ""
    new = abs(marks.judgment_count - counted) + decisions_since(learning.study_id, then)
    due = latest.created_at + timedelta(minutes=learning.version_min_minutes)
    if new >= learning.version_min_new_answers or now >= due:
        return ""
    more = learning.version_min_new_answers - new
    quiet_at = now + timedelta(seconds=quiet_in)
    return (
        f"{method}: {new} new answer{'s' * (new != 1)} since version #{latest.pk}; next version "
        f"due {quiet_at:%H:%M:%S} UTC (quiet for {learning.debounce_seconds} s), or after "
        f"{more} more answer{'s' * (more != 1)}, by {due:%H:%M} UTC at the latest"
    )


def decisions_since(study_id: int, mark: str) -> int:
    """Adjudications made, changed or taken back since a version whose adjudication mark was
    ``mark`` ("<count>:<highest id>", "" for none): the newer rows, and the rows gone."""
    count, _, top = mark.partition(":")
    newer = Adjudication.objects.filter(study_id=study_id, id__gt=int(top or 0)).count()
    now = Adjudication.objects.filter(study_id=study_id).count()
    return newer + max(0, int(count or 0) + newer - now)


def _refit_claimed(study_id: int, report: RefitReport) -> None:
    study = Study.objects.select_related("space").get(pk=study_id)
    learning = selectors.learning_settings_get(study_id=study_id)
    excluded = snapshots.excluded_annotator_ids(learning_settings=learning)
    storage.versions_interrupted_retire(study_id=study_id)
    marks = snapshots.study_data_marks(study_id=study_id)
    plans = {
        method: plan
        for method, plan in _method_plans(learning, excluded, marks).items()
        if not selectors.version_exists_for(
            study_id=study_id,
            method=method,
            judgment_watermark=marks.judgment_watermark,
            group_watermark=plan.group_watermark,
            fingerprint=plan.fingerprint,
        )
    }
    now = timezone.now()
    quiet_in = (
        scheduling.study_quiet_in(study_id=study_id, debounce=learning.debounce_seconds, now=now)
        if plans
        else 0.0
    )
    for method in list(plans) if quiet_in > 0 else []:  # quiet: every method gets a version
        reason = _waits(method, plans[method], marks, learning, now, quiet_in)
        if reason:
            report.waiting.append(reason)
            del plans[method]
    if not plans:
        if report.waiting:
            report.outcome = Outcome.WAITING
            report.retry_in = quiet_in
        return
    report.outcome = Outcome.FITTED
    started = time.perf_counter()
    inputs = increments.fit_inputs(
        study=study,
        marks=marks,
        excluded_annotators=excluded,
        policy=learning.repeat_policy,
        validation_share=learning.validation_share,
    )
    read = f"{inputs.read} in {time.perf_counter() - started:.2f} s"  # the rest: groups
    groups = (
        snapshots.group_snapshot(study_id=study_id, excluded_annotators=excluded)
        if Method.FACE in plans or learning.face_pairs_as_groups  # (EXPLORE's prior: groups)
        else snapshots.GroupSnapshot(rows=[], creators=0)
    )
    counts = inputs.counts | {
        "groups": len(groups.rows),
        "judgments_total": marks.judgment_count,
        "group_creators": groups.creators,
    }
    snapshot_seconds = (time.perf_counter() - started, read, inputs.extended)
    for method, plan in plans.items():
        version = storage.version_start(
            study=study,
            method=method,
            label=plan.label,
            parameters=plan.parameters,
            judgment_watermark=marks.judgment_watermark,
            group_watermark=marks.group_watermark,
            judgment_count=marks.judgment_count,
            counts=counts,
            parent=selectors.version_latest_ready(study_id=study.pk, method=method),
        )
        if version is None:
            continue
        if not _version_fit(version, study, learning, inputs, groups, snapshot_seconds):
            report.failed.append(version.pk)
            continue
        report.ready.append(version.pk)
        if version_evaluate(version, learning=learning).publish:
            storage.version_publish(version_id=version.pk, user=None)
            report.published.append(version.pk)
    newitems.recheck_current(
        study_id,
        inputs.pairs,
        study.space.vectors,
        policy=learning.repeat_policy,
        control_only=control_only(study.strategy),
        fresh=set(report.ready),
        watermark=marks.judgment_watermark,
    )


def _version_fit(version, study, learning, inputs, groups, snapshot) -> bool:
    """Fit, store Sigma atomically and mark ready; on failure mark failed. True when ready.
    ``snapshot``: its seconds, how the judgments were read, whether the arrays were extended."""
    started = time.perf_counter()
    read, pairs = study.space.vectors, inputs.pairs
    fold_warms = None  # EXPLORE's new-items fold fits' starts and solutions
    try:
        if version.method == Method.EXPLORE:
            prior, prior_name, fold_prior = _explore_prior(
                study, learning, pairs, groups, read, inputs.scatter
            )
            fit_args = {
                "max_eigenvalue": learning.explore_max_eigenvalue,
                "prior": prior,
                "prior_name": prior_name,
                "weight_by_reliability": learning.weight_by_reliability,
                "fold_prior": fold_prior,
            }
            dimension = study.space.dimension
            warm = cache.warm_load(study=study, dimension=dimension)
            outcome = fitting.fit_explore(pairs, read, warm=warm, **fit_args)
            fold_warms = newitems.FoldWarms(cache.fold_warms_load(study=study, dimension=dimension))
            recipe = newitems.explore_recipe(read, **fit_args, warms=fold_warms)
        else:
            outcome = face_fits.fit_face(
                pairs,
                groups,
                read,
                k=learning.face_components,
                use_pairs=learning.face_pairs_as_groups,
                scatter=inputs.scatter,
            )
            k, use = learning.face_components, learning.face_pairs_as_groups
            recipe = newitems.face_recipe(pairs, groups, read, k=k, use_pairs=use)
        fitted = time.perf_counter()
        uniform = control_only(study.strategy)
        new_items, folds = newitems.new_items_check(pairs, read, recipe, control_only=uniform)
        new_items["seconds"] = round(time.perf_counter() - fitted, 4)
        storage.version_store(
            version,
            sigma=outcome.sigma,
            parameters=outcome.parameters,
            diagnostics=outcome.diagnostics
            | {
                "snapshot_seconds": round(snapshot[0], 4),
                "snapshot_read": snapshot[1],
                "snapshot_arrays": "extended" if snapshot[2] else "built",
                "new_items": new_items,  # judged by learning/evaluation/informative.py
            },
            fit_seconds=time.perf_counter() - started,
        )
        newitems.store_folds(version, folds, pairs)
        if outcome.warm is not None:
            cache.warm_save(study=study, warm=outcome.warm)
        if fold_warms is not None and fold_warms.kept:
            cache.fold_warms_save(study=study, warms=fold_warms.kept)
    except TRANSIENT_DB_ERRORS as error:
        storage.version_fail(version, _message(error), transient=True)
        raise
    except Exception as error:  # noqa: BLE001 - any fit failure is stored on the version
        storage.version_fail(version, _message(error), transient=False)
        return False
    return True


def _explore_prior(study: Study, learning, pairs, groups, read, scatter=None) -> tuple:
    """EXPLORE's metric where its pairs say nothing: the study's FACE Sigma when it has one, else
    a scaled identity (docs/core.md); the name; and, when FACE learns from the pairs judged
    comparable (``face_pairs_as_groups``), how to refit it on a fold's training part alone.
    Those pairs are EXPLORE's own answers: a prior fitted on all of them has seen the held-out
    pairs it is scored on (issue 25: a version at 100 German-credit answers promised +0.15 per
    pair over the constant on held-out pairs and gained +0.00 on the next 100 answers)."""
    face = selectors.version_latest_ready(study_id=study.pk, method=Method.FACE)
    if face is None or face.dimension != study.space.dimension:
        return None, "identity", None
    if not learning.face_pairs_as_groups:
        return np.asarray(sigmas.sigma_of(face)), f"face #{face.pk}", None
    k = learning.face_components

    def fold_prior(keep: np.ndarray) -> np.ndarray:
        return face_fits.face_prior(pairs, groups, read, k=k, keep=keep, scatter=scatter)

    return (
        fold_prior(np.ones(len(pairs), dtype=bool)),
        "face (groups and comparable pairs)",
        fold_prior,
    )


def _message(error: Exception) -> str:
    message = str(error) or type(error).__name__
    return message if isinstance(error, fitting.FitError) else f"{type(error).__name__}: {message}"


def refit_sweep() -> list[int]:
    """Queue refits of studies whose data is newer than their versions; the ids queued. Also
    removes this worker's refit caches of deleted studies."""
    cache.study_caches_prune()
    queued = []
    for study_id in snapshots.study_ids_with_newer_data():
        if scheduling.refit_mark_due(study_id=study_id, debounce=0):
            queued.append(study_id)
    return queued
