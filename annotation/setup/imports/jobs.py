"""Feedback imports of the import page, confirmed once and stored by the worker.

* :func:`preview_keep` — the previewed file under ``feedback-previews/`` in media storage and its
  :class:`~annotation.models.FeedbackImport` row (``preview``);
* :func:`import_confirm` — the atomic claim: one conditional UPDATE ``preview`` → ``pending``;
  of five simultaneous confirmations (or a double click) one wins, the others are told so, and
  the winner's task is queued after the commit (a broker that is down leaves it pending: the
  sweep sends it again);
* :func:`import_run` — the worker (task ``annotation.feedback_import``): claims ``pending`` →
  ``running`` (or a ``running`` row whose ``LEASE`` ran out: a dead worker), reads and checks
  the file again (``feedback_read``) and stores it (``feedback_store``) in one transaction that
  also marks the row ``done`` and holds it locked, so that no second worker stores it too;
* :func:`imports_sweep` — (task ``annotation.sweep``, queued with the other sweeps) re-sends
  imports no worker took within ``RESEND_AFTER`` or whose lease ran out, fails one after
  ``MAX_ATTEMPTS`` starts, and removes previews older than ``PREVIEW_HOURS`` with their files.
"""

from __future__ import annotations

import io
import logging
import uuid
from datetime import timedelta
from pathlib import PurePosixPath

from celery import current_app
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.models import FeedbackImport, Study
from annotation.setup.feedback_files import FeedbackFormatError, FeedbackPlan, feedback_read
from annotation.setup.feedback_import import feedback_store
from common import storage

logger = logging.getLogger(__name__)
Status = FeedbackImport.Status
PREVIEW_DIR = "feedback-previews"
PREVIEW_HOURS = 24
IMPORT_TASK = "annotation.feedback_import"
SWEEP_TASK = "annotation.sweep"
LEASE = timedelta(minutes=15)  # at most SETUP_UPLOAD_MAX_ROWS rows: minutes, not hours
RESEND_AFTER = timedelta(minutes=5)
MAX_ATTEMPTS = 3


def preview_name(token: str) -> str:
    """The previewed file's name in media storage (the local folder or the bucket)."""
    return f"{PREVIEW_DIR}/{token}.upload"


def plan_read(study: Study, data: bytes, choice: dict) -> FeedbackPlan:
    """The checked plan of a file (the preview's and the worker's one reading)."""
    return feedback_read(
        study=study,
        raw_lines=io.BytesIO(data),
        name=choice["name"],
        kind=choice["kind"],
        fmt=choice["fmt"],
        provenance=choice["provenance"],
        max_rows=settings.SETUP_UPLOAD_MAX_ROWS,
    )


def preview_keep(*, study: Study, user, data: bytes, choice: dict) -> FeedbackImport:
    """Keep a previewed file for its confirmation; removes previews older than PREVIEW_HOURS."""
    _previews_expire(timezone.now())
    token = uuid.uuid4().hex
    storage.store_bytes(data, preview_name(token))
    return FeedbackImport.objects.create(
        study=study,
        created_by=user,
        token=token,
        name=choice["name"][:255],
        kind=choice["kind"],
        fmt=choice["fmt"],
        provenance=(choice["provenance"] or "")[:300],
    )


def import_confirm(*, study: Study, token: str) -> FeedbackImport | None:
    """Claim the preview ``token`` of ``study`` for the worker: the row, or None when it is no
    preview (any more): confirmed already by another click, expired, or never made."""
    now = timezone.now()
    with transaction.atomic():
        claimed = FeedbackImport.objects.filter(
            token=token, study=study, status=Status.PREVIEW
        ).update(status=Status.PENDING, queued_at=now)
        if not claimed:
            return None
        job = FeedbackImport.objects.get(token=token)
        transaction.on_commit(lambda: import_enqueue(job.pk))
    return job


def import_enqueue(import_id: int) -> bool:
    """Queue the worker's task; a broker that is down leaves the import pending (re-sent)."""
    try:
        current_app.send_task(
            IMPORT_TASK, args=[import_id], queue=settings.CELERY_TASK_DEFAULT_QUEUE
        )
    except Exception:  # a down broker: the sweep sends it again
        logger.warning("could not queue feedback import %s", import_id, exc_info=True)
        return False
    return True


def _claim(import_id: int) -> FeedbackImport | None:
    now = timezone.now()
    claimed = FeedbackImport.objects.filter(
        Q(status=Status.PENDING) | Q(status=Status.RUNNING, started_at__lt=now - LEASE),
        pk=import_id,
    ).update(status=Status.RUNNING, started_at=now, attempts=F("attempts") + 1)
    return FeedbackImport.objects.select_related("study").get(pk=import_id) if claimed else None


def _finish(job: FeedbackImport, *, status: str, error: str = "", **counts) -> None:
    FeedbackImport.objects.filter(pk=job.pk).update(
        status=status, error=error[:2000], finished_at=timezone.now(), **counts
    )
    default_storage.delete(preview_name(job.token))


def import_run(*, import_id: int) -> str:
    """Store one confirmed import. ``"done"``, ``"failed"``, ``"busy"`` (another worker holds
    its lease) or ``"not run: <status>"``."""
    job = _claim(import_id)
    if job is None:
        status = FeedbackImport.objects.filter(pk=import_id).values_list("status", flat=True)
        status = status.first()
        return "busy" if status == Status.RUNNING else f"not run: {status or 'no such import'}"
    if job.attempts > MAX_ATTEMPTS:
        _finish(job, status=Status.FAILED, error=f"the worker stopped {MAX_ATTEMPTS} times")
        return "failed"
    name = preview_name(job.token)
    try:
        data = storage.read_bytes(name)
    except FileNotFoundError:
        _finish(job, status=Status.FAILED, error="the previewed file is gone; upload it again")
        return "failed"
    choice = {"name": job.name, "kind": job.kind, "fmt": job.fmt, "provenance": job.provenance}
    try:
        with transaction.atomic():
            # Held until the commit: a second worker's claim waits, then finds it done.
            mine = FeedbackImport.objects.select_for_update().filter(
                pk=job.pk, status=Status.RUNNING, attempts=job.attempts
            )
            if not list(mine.values_list("pk", flat=True)):  # (SELECT … FOR UPDATE)
                return "not run: claimed by another worker"
            plan = plan_read(job.study, data, choice)
            summary = feedback_store(study=job.study, plan=plan)
            mine.update(
                status=Status.DONE,
                finished_at=timezone.now(),
                judgments=summary.judgments,
                groups=summary.groups,
                members=summary.members,
            )
    except FeedbackFormatError as error:  # the study changed since the preview
        where = f"line {error.line}: " if error.line is not None else ""
        _finish(job, status=Status.FAILED, error=f"{where}{error.message}; nothing was stored")
        return "failed"
    except Exception as error:
        _finish(job, status=Status.FAILED, error=f"{type(error).__name__}; nothing was stored")
        raise
    default_storage.delete(name)
    return "done"


def _previews_expire(now) -> int:
    """Previews never confirmed, older than PREVIEW_HOURS: rows and files; stray files too."""
    cutoff = now - timedelta(hours=PREVIEW_HOURS)
    removed = 0
    for job in FeedbackImport.objects.filter(status=Status.PREVIEW, created_at__lt=cutoff):
        if FeedbackImport.objects.filter(pk=job.pk, status=Status.PREVIEW).delete()[0]:
            default_storage.delete(preview_name(job.token))
            removed += 1
    live = set(
        FeedbackImport.objects.filter(
            status__in=[Status.PREVIEW, Status.PENDING, Status.RUNNING]
        ).values_list("token", flat=True)
    )
    for old, modified in storage.files_under(PREVIEW_DIR):
        token = PurePosixPath(old).stem
        if old.endswith(".upload") and token not in live and modified and modified < cutoff:
            default_storage.delete(old)
            removed += 1
    return removed


def imports_sweep(*, now=None) -> dict:
    """Re-send lost imports, fail those that killed their worker MAX_ATTEMPTS times, expire
    old previews; returns the counts."""
    now = now or timezone.now()
    resent = failed = 0
    lost = FeedbackImport.objects.filter(
        Q(status=Status.PENDING, queued_at__lt=now - RESEND_AFTER)
        | Q(status=Status.RUNNING, started_at__lt=now - LEASE)
    )
    for job in lost:
        if job.status == Status.RUNNING and job.attempts >= MAX_ATTEMPTS:
            error = f"the worker stopped {job.attempts} times while importing this file"
            if FeedbackImport.objects.filter(pk=job.pk, status=Status.RUNNING).update(
                status=Status.FAILED, error=error, finished_at=now
            ):
                default_storage.delete(preview_name(job.token))
                failed += 1
            continue
        if job.status == Status.PENDING:  # once per RESEND_AFTER
            FeedbackImport.objects.filter(pk=job.pk).update(queued_at=now)
        import_enqueue(job.pk)
        resent += 1
    expired = _previews_expire(now)
    if resent or failed or expired:
        logger.info(
            "feedback imports: %s resent, %s failed, %s previews expired",
            *(resent, failed, expired),
        )
    return {"resent": resent, "failed": failed, "expired": expired}
