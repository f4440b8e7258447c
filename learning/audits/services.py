"""Writes of the audit room: start an audit (the file's head checked, the file stored as
uploaded, the task queued on the audits' own queue after the commit; at most
``AUDIT_MAX_IN_FLIGHT_USER`` and ``AUDIT_MAX_IN_FLIGHT_STUDY`` in flight), send again the audits
a broker or a worker lost (the sweep), and send violations back to the annotators as candidate
pairs.

Reviewers and admins of a study (and staff) may audit; annotators may not. Asking the
annotators changes the study's pairs, so it is for the study's admins, through the set-up's
own service (``annotation.setup.pairs.candidate_pairs_upload``: pool checked, audited).
"""

from __future__ import annotations

import logging
import math
import uuid
from datetime import timedelta
from pathlib import Path, PurePosixPath

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.access import Action, require
from annotation.models import CandidatePair, Study
from annotation.setup.files import PairRow
from annotation.setup.pairs import candidate_pairs_upload
from audit.services import Action as AuditAction
from audit.services import audit_record
from common import storage
from common.errors import InvalidInput, PayloadTooLarge, TooBusy
from common.queues import audit_queue
from common.text import invisible, text_problem
from learning.audits.inputs import FORMATS, predictions_check
from learning.models import AuditStatus, AuditViolation, MetricVersion, ModelAudit
from learning.versions.selectors import version_current
from spaces.exceptions import InputFileError
from spaces.tables import guess_format, max_table_bytes

logger = logging.getLogger(__name__)

AUDIT_REFUSED = "Only reviewers and admins of this study can audit models."
ASK_REFUSED = "Only an admin of the study can send pairs to its annotators."
TASK = "learning.audit_model"
MAX_ASK = 500
RETRY_AFTER = 30  # seconds a refused audit (too many in flight) is told to wait


def _number(value, name: str, *, integer: bool = False, low=None, high=None):
    """A form or API value as a number in range; None stays None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        kind = "a whole number" if integer else "a number"
        raise InvalidInput(f"{name} must be {kind}, got {str(value)[:40]!r}.") from None
    if (
        not math.isfinite(number)
        or (low is not None and number < low)
        or (high is not None and number > high)
    ):
        bounds = f" between {low} and {high}" if high is not None else " above 0"
        raise InvalidInput(f"{name} must be a finite number{bounds}, got {str(value)[:40]!r}.")
    return number


def audit_parameters(*, k=None, epsilon=None, lipschitz=None, name="", delta=None) -> dict:
    """Checked parameters: ``k`` in [1, AUDIT_MAX_K] (default 10), ``epsilon`` and ``lipschitz``
    positive (None: the defaults, ``learning.audits.run``), a visible ``name`` (≤ 200), the
    twins' ``delta`` in [0, 1e6] (None: ``learning.audits.twins.DEFAULT_DELTA``)."""
    k = _number(k, "k", integer=True, low=1, high=settings.AUDIT_MAX_K)
    epsilon = _number(epsilon, "epsilon", low=0)
    lipschitz = _number(lipschitz, "lipschitz", low=0)
    for value, label in ((epsilon, "epsilon"), (lipschitz, "lipschitz")):
        if value is not None and value <= 0:
            raise InvalidInput(f"{label} must be above 0.")
    name = (name or "").strip()
    if len(name) > 200 or text_problem(name):
        raise InvalidInput("The name must be text of at most 200 characters.")
    delta = _number(delta, "delta", low=0, high=1e6)
    return {
        "k": 10 if k is None else k,
        "epsilon": epsilon,
        "lipschitz": lipschitz,
        "name": name,
        "delta": delta,
    }


def audit_version(*, study: Study, version_id=None) -> MetricVersion:
    """The metric version to audit under: the given one (a ready version of this study), else the
    study's published one (what downstream code downloads, whatever its verdict: the audit page
    shows it), else its current one (the newest judged informative)."""
    if version_id in (None, ""):
        published = MetricVersion.objects.ready().filter(study=study, is_published=True)
        version = published.order_by("-id").first() or version_current(study_id=study.pk)
        if version is None:
            raise InvalidInput("The study has no ready metric version to audit under yet.")
        return version
    number = _number(version_id, "version", integer=True, low=1)
    version = MetricVersion.objects.ready().filter(study=study, pk=number).first()
    if version is None:
        raise InvalidInput(f"Version {number} is not a ready metric version of this study.")
    return version


def audit_enqueue(audit_id: int) -> bool:
    """Send the audit's task by name to the audits' own queue (``common.queues.audit_queue``),
    and note when the sweep may send it again (``lease_until`` of a queued audit). A broker that
    is down leaves the audit queued with no such time: the next sweep sends it
    (:func:`audits_resend`). True when sent."""
    try:
        current_app.send_task(TASK, args=[audit_id], queue=audit_queue(), ignore_result=True)
    except Exception as exc:  # noqa: BLE001 - a down broker: the sweep sends it later
        logger.warning("could not queue audit %s (the sweep will): %s", audit_id, exc)
        return False
    resend = timezone.now() + timedelta(seconds=settings.AUDIT_LEASE_SECONDS)
    ModelAudit.objects.filter(pk=audit_id, status=AuditStatus.QUEUED).update(lease_until=resend)
    return True


def audits_resend() -> list[int]:
    """The sweep's part for audits: send again every queued audit whose message may be lost
    (never sent, or sent ``AUDIT_LEASE_SECONDS`` ago and not started), every running one
    whose lease ran out (its worker died), and every done one whose metric-uncertainty run's
    lease ran out. Each run claims its audit, so a second message is
    harmless. The ids sent."""
    now = timezone.now()
    lost = Q(status=AuditStatus.QUEUED) & (Q(lease_until__isnull=True) | Q(lease_until__lt=now))
    dead = Q(status=AuditStatus.RUNNING, lease_until__lt=now)
    # done, but its run under the refits of Σ was cut short (learning/audits/uncertainty.py)
    cut = Q(status=AuditStatus.DONE, uncertainty__status="running", lease_until__lt=now)
    ids = list(
        ModelAudit.objects.filter(lost | dead | cut).order_by("pk").values_list("pk", flat=True)
    )
    sent = [audit_id for audit_id in ids if audit_enqueue(audit_id)]
    if sent:
        logger.info("sweep: audits sent again: %s", sent)
    return sent


def _in_flight(user, study: Study) -> None:
    """Refuse a new audit (429) while the user or the study has as many queued or running as
    allowed; called with both rows locked, so concurrent requests count each other."""
    open_ = ModelAudit.objects.filter(status__in=(AuditStatus.QUEUED, AuditStatus.RUNNING))
    for count, limit, whose in (
        (open_.filter(created_by=user).count(), settings.AUDIT_MAX_IN_FLIGHT_USER, "You have"),
        (open_.filter(study=study).count(), settings.AUDIT_MAX_IN_FLIGHT_STUDY, "This study has"),
    ):
        if count >= limit:
            raise TooBusy(
                f"{whose} {count} audit(s) queued or running, the most allowed at once "
                f"({limit}); upload again when one is done.",
                retry_after=RETRY_AFTER,
            )


def _lock(user, study: Study) -> None:
    """Lock the user's row, then the study's (always in this order: no deadlock)."""
    if user.pk is not None:
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    Study.objects.select_for_update().filter(pk=study.pk).first()


def _stored(upload, study: Study, k: int) -> tuple[str, tuple]:
    """Check the head of ``upload`` (a copy in a temporary folder), then store it as uploaded:
    its name in media storage, and the row count when known and whether it has decisions.
    Nothing is stored on error."""
    if upload.size is not None and upload.size > max_table_bytes():
        raise PayloadTooLarge(f"The file is larger than {settings.MAX_TABLE_MB} MB.")
    if not upload.size:
        raise InvalidInput("The file is empty.")
    try:
        fmt = guess_format(upload.name or "", FORMATS)
    except InputFileError as exc:
        raise InvalidInput(f"The score file: {exc}.") from None
    with storage.work_folder("audit-") as folder:
        path = folder / f"predictions.{fmt}"
        with open(path, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        head = predictions_check(study=study, path=path, fmt=fmt, k=k)
        name = f"audits/{uuid.uuid4().hex[:12]}/predictions.{fmt}"
        return storage.store_path(path, name), head


def _remove(name: str) -> None:
    storage.folder_remove(str(PurePosixPath(name).parent))


def audit_create(
    *,
    user,
    study: Study,
    upload,
    version_id=None,
    k=None,
    epsilon=None,
    lipschitz=None,
    name="",
    delta=None,
) -> ModelAudit:
    """Check what the request can (the parameters, the audits in flight, the file's bounds and
    head), store the file as uploaded, create the audit and queue it after the commit; the worker
    reads and checks every row. Any problem raises InvalidInput (or PayloadTooLarge, or TooBusy:
    429) and writes nothing. The audit is returned as stored once the commit's work is done."""
    require(user, study, Action.REVIEW, AUDIT_REFUSED)
    if upload is None:
        raise InvalidInput("Upload the model's scores as predictions (CSV or Parquet).")
    params = audit_parameters(k=k, epsilon=epsilon, lipschitz=lipschitz, name=name, delta=delta)
    version = audit_version(study=study, version_id=version_id)
    if version.dimension is not None and version.dimension != study.space.dimension:
        raise InvalidInput(
            f"Version {version.pk} is {version.dimension}-dimensional; the study's space has "
            f"{study.space.dimension} dimensions."
        )
    _in_flight(user, study)  # before reading the file; again below, under the locks
    stored, (rows, has_decision) = _stored(upload, study, params["k"])
    original = Path(upload.name or "predictions").name[:255]
    name = params["name"] or original[:200]
    if invisible(name):
        name = "audit"
    try:
        with transaction.atomic():
            _lock(user, study)
            _in_flight(user, study)
            audit = ModelAudit.objects.create(
                study=study,
                version=version,
                name=name,
                created_by=user,
                k=params["k"],
                epsilon=params["epsilon"],
                lipschitz=params["lipschitz"],
                delta=params["delta"],
                predictions=stored,
                original_name=original,
                item_count=rows or 0,
                has_decision=has_decision,
            )
            audit_record(
                action=AuditAction.MODEL_AUDIT,
                target=audit,
                actor=user,
                study_id=study.pk,
                detail={"name": name, "version": version.pk, "items": rows},
            )
            transaction.on_commit(lambda: audit_enqueue(audit.pk))
    except BaseException:
        _remove(stored)
        raise
    audit.refresh_from_db()
    return audit


def audit_ask_annotators(*, user, audit: ModelAudit, violation_ids) -> dict:
    """Make the chosen violations candidate pairs of the audit's study (offered to annotators
    before the sampler's own choices) and mark them asked; all or nothing."""
    require(user, audit.study_id, Action.MANAGE, ASK_REFUSED)
    try:
        ids = sorted({int(v) for v in violation_ids})
    except (TypeError, ValueError):
        raise InvalidInput("Choose violations by their ids.") from None
    if not ids:
        raise InvalidInput("Choose at least one violation to ask about.")
    if len(ids) > MAX_ASK:
        raise InvalidInput(f"At most {MAX_ASK} violations at a time.")
    chosen = list(AuditViolation.objects.filter(audit=audit, pk__in=ids).order_by("rank"))
    missing = sorted(set(ids) - {v.pk for v in chosen})
    if missing:
        raise InvalidInput(
            f"Violation(s) {', '.join(map(str, missing[:10]))} are not in this audit."
        )
    new = [v.rank for v in chosen if v.item_a_id is None or v.item_b_id is None]
    if new:
        raise InvalidInput(
            f"Violation(s) ranked {', '.join(map(str, new[:10]))} involve new records, which are "
            "not items of the study: annotators can only judge items of its pool."
        )
    rows = [PairRow(line=v.rank, key_a=v.key_a, key_b=v.key_b) for v in chosen]
    with transaction.atomic():
        result = candidate_pairs_upload(
            user=user, study=audit.study, rows=rows, priority=CandidatePair.ASKED
        )
        AuditViolation.objects.filter(pk__in=[v.pk for v in chosen], asked_at__isnull=True).update(
            asked_at=timezone.now()
        )
        audit_record(
            action=AuditAction.AUDIT_ASK,
            target=audit,
            actor=user,
            study_id=audit.study_id,
            detail={"ranks": [v.rank for v in chosen]},
        )
    return result
