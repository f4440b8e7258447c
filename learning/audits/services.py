"""Writes of the audit room: start an audit (checked input, queued after the commit) and send
violations back to the annotators as candidate pairs.

Reviewers and admins of a study (and staff) may audit; annotators may not. Asking the
annotators changes the study's pairs, so it is for the study's admins, through the set-up's
own service (``annotation.setup.pairs.candidate_pairs_upload``: pool checked, audited).
"""

from __future__ import annotations

import logging
import math
import uuid
from pathlib import Path

from celery import current_app
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotation.access import Action, require
from annotation.models import CandidatePair, Study
from annotation.setup.files import PairRow
from annotation.setup.pairs import candidate_pairs_upload
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput
from common.text import invisible, text_problem
from learning.audits.inputs import predictions_read
from learning.models import AuditStatus, AuditViolation, MetricVersion, ModelAudit
from learning.versions.selectors import version_current

logger = logging.getLogger(__name__)

AUDIT_REFUSED = "Only reviewers and admins of this study can audit models."
ASK_REFUSED = "Only an admin of the study can send pairs to its annotators."
TASK = "learning.audit_model"
MAX_ASK = 500


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
    study's current one (the published version, else the newest ready)."""
    if version_id in (None, ""):
        version = version_current(study_id=study.pk)
        if version is None:
            raise InvalidInput("The study has no ready metric version to audit under yet.")
        return version
    number = _number(version_id, "version", integer=True, low=1)
    version = MetricVersion.objects.ready().filter(study=study, pk=number).first()
    if version is None:
        raise InvalidInput(f"Version {number} is not a ready metric version of this study.")
    return version


def audit_enqueue(audit_id: int) -> None:
    """Queue the audit's task by name; a broker that is down marks the audit failed, saying so."""
    try:
        current_app.send_task(TASK, args=[audit_id], queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    except Exception as exc:  # noqa: BLE001 - a down broker: say so on the page
        logger.warning("could not queue audit %s: %s", audit_id, exc)
        ModelAudit.objects.filter(pk=audit_id, status=AuditStatus.QUEUED).update(
            status=AuditStatus.FAILED,
            error="could not queue the audit (the task broker is unreachable); upload again",
            finished_at=timezone.now(),
        )


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
    """Check everything, store the normalised scores, create the audit and queue it after the
    commit. Any problem raises InvalidInput (or PayloadTooLarge) and writes nothing."""
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
    predictions = predictions_read(study=study, upload=upload)
    if predictions.count <= params["k"]:
        raise InvalidInput(
            f"The file scores {predictions.count} item(s); k = {params['k']} neighbours need at "
            f"least {params['k'] + 1}."
        )
    original = Path(upload.name or "predictions").name[:255]
    name = params["name"] or original[:200]
    if invisible(name):
        name = "audit"
    stored = default_storage.save(
        f"audits/{uuid.uuid4().hex[:12]}/predictions.npz", ContentFile(predictions.to_bytes())
    )
    try:
        with transaction.atomic():
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
                item_count=predictions.count,
                new_records=len(predictions.new_keys),
                has_decision=predictions.decisions is not None,
            )
            audit_record(
                action=AuditAction.MODEL_AUDIT,
                target=audit,
                actor=user,
                study_id=study.pk,
                detail={"name": name, "version": version.pk, "items": predictions.count},
            )
            transaction.on_commit(lambda: audit_enqueue(audit.pk))
    except BaseException:
        default_storage.delete(stored)
        raise
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
