"""Writes for learning: refit a study into new metric versions, evaluate them, publish one.

``refit_study`` runs in a Celery worker (``learning.tasks``). It holds the study's lease (one
refit per study), snapshots the data up to a watermark, fits each enabled method whose input
changed, and stores every version in two steps: a ``fitting`` row first, then - once Sigma is
completely on disk (written to a temporary name, fsynced, renamed) - ``ready`` in one
transaction. A worker killed in between leaves a ``fitting`` row that the next refit marks
failed (transient, so its input is refitted); never a ready version with half-written data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.utils import timezone
from threadpoolctl import threadpool_limits

from annotation.models import Membership, Study
from audit.services import Action as AuditAction
from audit.services import audit_record
from learning import dashboard_refresh, fitting, scheduling, selectors
from learning.models import MetricVersion, StudyLearningSettings
from learning.version_checks import version_evaluate

logger = logging.getLogger(__name__)

TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)
BUSY_RETRY_MAX = 5.0  # seconds


@dataclass
class RefitReport:
    """What one refit did; ``outcome`` is busy, nothing new, or fitted."""

    study_id: int
    outcome: str
    retry_in: float = 0.0
    ready: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    published: list[int] = field(default_factory=list)


class _LeaseKeeper:
    """Renews the study's lease in a background thread while a refit runs."""

    def __init__(self, study_id: int, token: str) -> None:
        self.study_id, self.token = study_id, token
        self.lost = False
        self._stop = threading.Event()
        # Only a committed claim can be renewed from another connection.
        self._thread = (
            None
            if connection.in_atomic_block
            else threading.Thread(target=self._run, name=f"refit-lease-{study_id}", daemon=True)
        )

    def _run(self) -> None:
        interval = max(0.5, scheduling.lease_seconds() / 3)
        try:
            while not self._stop.wait(interval):
                if not scheduling.lease_renew(study_id=self.study_id, token=self.token):
                    self.lost = True
                    logger.warning("refit lease of study %s was lost", self.study_id)
                    return
        except DatabaseError:
            logger.warning("could not renew the refit lease of study %s", self.study_id)
        finally:
            connections.close_all()  # this thread's own connections

    def __enter__(self) -> _LeaseKeeper:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


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
            study_id=study_id, outcome="busy", retry_in=min(max(1.0, remaining), BUSY_RETRY_MAX)
        )
    report = RefitReport(study_id=study_id, outcome="nothing new")
    try:
        with _LeaseKeeper(study_id, token), threadpool_limits(settings.LEARNING_BLAS_THREADS):
            _refit_claimed(study_id, report)
    finally:
        summary = f"{report.outcome}: ready {report.ready} failed {report.failed}"
        try:
            scheduling.lease_release(study_id=study_id, token=token, outcome=summary)
        except DatabaseError:
            logger.warning("could not release the refit lease of study %s", study_id)
    dashboard_refresh.dashboard_refresh_request(study_id=study_id)  # figures in the worker
    return report


def _fingerprint(method: str, parameters: dict, marks: selectors.DataMarks) -> str:
    payload = json.dumps(
        {"method": method, "parameters": parameters, "judgments_total": marks.judgment_count},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def _method_plans(
    study: Study, learning: StudyLearningSettings, excluded: list[int], marks: selectors.DataMarks
) -> dict[str, tuple[dict, str, int | None]]:
    """Per enabled method: its parameters, fingerprint and the group watermark that matters."""
    common = {
        "repeat_policy": learning.repeat_policy,
        "excluded_annotators": excluded,
        "validation_share": learning.validation_share,
    }
    plans = {}
    if learning.fit_explore and marks.judgment_count:
        params = common | {"max_eigenvalue": learning.explore_max_eigenvalue}
        plans["explore"] = (params, _fingerprint("explore", params, marks), None)
    uses_pairs = learning.face_pairs_as_groups and marks.judgment_count > 0
    if learning.fit_face and (marks.group_watermark or uses_pairs):
        params = common | {
            "n_components": learning.face_components,
            "pairs_as_groups": learning.face_pairs_as_groups,
        }
        plans["face"] = (params, _fingerprint("face", params, marks), marks.group_watermark)
    return plans


def _interrupted_versions_retire(study_id: int) -> None:
    """Fitting rows left by a killed worker (we hold the lease, so nobody else is fitting)."""
    orphans = list(MetricVersion.objects.filter(study_id=study_id, status="fitting"))
    for orphan in orphans:
        partial = Path(default_storage.path(_sigma_name(orphan)))
        for stale in (partial, partial.with_name(partial.name + ".partial")):
            stale.unlink(missing_ok=True)
    MetricVersion.objects.filter(pk__in=[o.pk for o in orphans]).update(
        status="failed",
        transient=True,
        error="Interrupted: the worker stopped during the fit; the data is refitted.",
    )


def _refit_claimed(study_id: int, report: RefitReport) -> None:
    study = Study.objects.select_related("space").get(pk=study_id)
    learning = selectors.learning_settings_get(study_id=study_id)
    excluded = selectors.excluded_annotator_ids(learning_settings=learning)
    _interrupted_versions_retire(study_id)
    marks = selectors.study_data_marks(study_id=study_id)
    plans = {
        method: plan
        for method, plan in _method_plans(study, learning, excluded, marks).items()
        if not selectors.version_exists_for(
            study_id=study_id,
            method=method,
            judgment_watermark=marks.judgment_watermark,
            group_watermark=plan[2],
            fingerprint=plan[1],
        )
    }
    if not plans:
        return
    report.outcome = "fitted"
    started = time.perf_counter()
    snapshot = selectors.judgment_snapshot(
        study_id=study_id, watermark=marks.judgment_watermark, excluded_annotators=excluded
    )
    groups = (
        selectors.group_snapshot(study_id=study_id, excluded_annotators=excluded)
        if "face" in plans
        else selectors.GroupSnapshot(rows=[], creators=0)
    )
    pairs = fitting.pair_data(
        snapshot, policy=learning.repeat_policy, validation_share=learning.validation_share
    )
    counts = fitting.counts_of(snapshot, groups, pairs) | {
        "judgments_total": marks.judgment_count,
        "group_creators": groups.creators,
    }
    snapshot_seconds = time.perf_counter() - started
    for method, (params, fingerprint, _) in plans.items():
        version = _version_start(study, method, params, fingerprint, marks, counts)
        if version is None:
            continue
        if _version_fit(version, study, learning, pairs, groups, snapshot_seconds):
            report.ready.append(version.pk)
            if version_evaluate(version, learning=learning):
                report.published.append(version.pk)
        else:
            report.failed.append(version.pk)


def _version_start(study, method, params, fingerprint, marks, counts) -> MetricVersion | None:
    parent = selectors.version_latest_ready(study_id=study.pk, method=method)
    k = params.get("n_components")
    label = f"face-{k if k is not None else 'auto'}" if method == "face" else "explore"
    try:
        with transaction.atomic():
            return MetricVersion.objects.create(
                study=study,
                method=method,
                label=label,
                parameters=params,
                fingerprint=fingerprint,
                judgment_watermark=marks.judgment_watermark,
                group_watermark=marks.group_watermark,
                counts=counts,
                parent=parent,
                dimension=study.space.dimension,
                status=MetricVersion.Status.FITTING,
            )
    except IntegrityError:  # the same input already has a live version
        logger.info("study %s %s: a version for this input exists", study.pk, method)
        return None


def _sigma_name(version: MetricVersion) -> str:
    return f"sigmas/study-{version.study_id}/{version.method}-v{version.pk}.npy"


def _version_fit(version, study, learning, pairs, groups, snapshot_seconds) -> bool:
    """Fit, store Sigma atomically and mark ready; on failure mark failed. True when ready."""
    started = time.perf_counter()
    read = study.space.vectors
    try:
        if version.method == "explore":
            outcome = fitting.fit_explore(
                pairs, read, max_eigenvalue=learning.explore_max_eigenvalue
            )
        else:
            outcome = fitting.fit_face(
                pairs,
                groups,
                read,
                k=learning.face_components,
                use_pairs=learning.face_pairs_as_groups,
            )
        data, sha = fitting.sigma_bytes(outcome.sigma)
        name = _sigma_name(version)
        fitting.file_write_atomic(Path(default_storage.path(name)), data)
    except TRANSIENT_DB_ERRORS as error:
        _version_fail(version, error, transient=True)
        raise
    except Exception as error:  # noqa: BLE001 - any fit failure is stored on the version
        _version_fail(version, error, transient=False)
        return False
    seconds = time.perf_counter() - started
    with transaction.atomic():
        MetricVersion.objects.filter(pk=version.pk).update(
            status=MetricVersion.Status.READY,
            sigma=name,
            sigma_sha256=sha,
            dimension=int(outcome.sigma.shape[0]),
            parameters=version.parameters | outcome.parameters,
            diagnostics=outcome.diagnostics | {"snapshot_seconds": round(snapshot_seconds, 4)},
            fit_seconds=seconds,
        )
    version.refresh_from_db()
    return True


def _version_fail(version: MetricVersion, error: Exception, *, transient: bool) -> None:
    message = str(error) or type(error).__name__
    if not isinstance(error, fitting.FitError):
        message = f"{type(error).__name__}: {message}"
    logger.warning(
        "study %s %s version %s failed: %s", version.study_id, version.method, version.pk, message
    )
    try:
        MetricVersion.objects.filter(pk=version.pk).update(
            status=MetricVersion.Status.FAILED, error=message[:2000], transient=transient
        )
    except DatabaseError:  # the database itself is down: the next refit retires the row
        logger.warning("could not mark version %s failed", version.pk)


def refit_sweep() -> list[int]:
    """Queue refits of studies whose data is newer than their versions; the ids queued."""
    queued = []
    for study_id in selectors.study_ids_with_newer_data():
        if scheduling.refit_mark_due(study_id=study_id, debounce=0):
            queued.append(study_id)
    return queued


def user_can_publish(user, study_id: int) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return (
        user.is_superuser
        or Membership.objects.filter(
            user=user, study_id=study_id, role=Membership.Role.ADMIN
        ).exists()
    )


def metric_version_publish(*, version: MetricVersion, user) -> MetricVersion:
    """Publish a ready version (admins only): the study+method's published one is swapped."""
    if not user_can_publish(user, version.study_id):
        raise PermissionDenied("Only an admin of the study can publish a metric version.")
    return version_publish_unchecked(version_id=version.pk, user=user)


@transaction.atomic
def version_publish_unchecked(*, version_id: int, user=None) -> MetricVersion:
    """The swap itself, used by the admin-checked service and by auto-publishing."""
    version = MetricVersion.objects.select_related("study").get(pk=version_id)
    Study.objects.select_for_update().filter(pk=version.study_id).first()  # serialise per study
    version.refresh_from_db()
    if version.status != MetricVersion.Status.READY:
        raise ValidationError(
            f"Version #{version.pk} is {version.status}; only a ready version can be published."
        )
    if version.is_published:
        return version
    previous = MetricVersion.objects.filter(
        study_id=version.study_id, method=version.method, is_published=True
    )
    replaced = list(previous.values_list("pk", flat=True))
    previous.update(is_published=False)
    version.is_published = True
    version.published_at = timezone.now()
    version.published_by = user
    version.save(update_fields=["is_published", "published_at", "published_by"])
    audit_record(
        action=AuditAction.PUBLISH,
        target=version,
        actor=user,
        study_id=version.study_id,
        detail={"method": version.method, "replaced": replaced, "automatic": user is None},
    )
    return version
