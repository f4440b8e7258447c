"""The spaces sweep: uploads that are never left behind (the task ``spaces.sweep``).

Every worker queues it with the refit sweep, when it starts and every
``LEARNING_SWEEP_SECONDS`` (``fairmetric_site.celery: SweepStep``). Each run:

* **expires** uploads pending longer than ``UPLOAD_PENDING_HOURS`` that nothing touched in
  that time — a record upload whose columns were never chosen, an import no worker took (one the
  sweep resends is touched: a live worker will run it) — marking them failed ("expired") and
  deleting their files;
* **resumes** imports whose message or worker was lost: a pending import (columns chosen) not
  started within ``RESEND_AFTER``, or a running one whose lease ran out (the worker died), gets
  its task sent again (each task claims its row, so a second message is harmless); after
  ``MAX_ATTEMPTS`` starts an import fails, saying so;
* **deletes leftovers**: upload folders no pending or running import refers to, and matrix files
  no space refers to (a worker killed between writing a space's matrix and committing it),
  older than ``UPLOAD_PENDING_HOURS``.

The kinds (vectors, records, texts) are given by ``spaces.tasks`` as :class:`Resumable` rules;
this module knows none of them.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db.models import Q
from django.utils import timezone

from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.uploads import import_enqueue, upload_files_remove

logger = logging.getLogger(__name__)
Status = EmbeddingImport.Status
RESEND_AFTER = timedelta(minutes=10)
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Resumable:
    """A kind of import: the rows it owns (``match``), its task, the lease after which a
    running import counts as dead, and the stages in which a pending one waits for a person
    (never resent)."""

    match: Q
    task: str
    lease: timedelta
    waiting: tuple[str, ...] = ()
    max_attempts: int | None = MAX_ATTEMPTS  # None: the kind counts its own (texts: slices)


def _expire(now) -> int:
    cutoff = now - timedelta(hours=settings.UPLOAD_PENDING_HOURS)
    old = EmbeddingImport.objects.filter(status=Status.PENDING, created_at__lt=cutoff).filter(
        Q(started_at__isnull=True) | Q(started_at__lt=cutoff)
    )
    expired = 0
    for job in old:
        message = (
            f"expired: still pending after {settings.UPLOAD_PENDING_HOURS} hours "
            "(UPLOAD_PENDING_HOURS); upload the file again"
        )
        if EmbeddingImport.objects.filter(pk=job.pk, status=Status.PENDING).update(
            status=Status.FAILED, error=message, finished_at=now
        ):
            upload_files_remove(job)
            expired += 1
    return expired


def _resume(kinds: Sequence[Resumable], now) -> tuple[int, int]:
    resent = failed = 0
    for kind in kinds:
        lost = EmbeddingImport.objects.filter(kind.match).filter(
            Q(status=Status.RUNNING, started_at__lt=now - kind.lease)
            | (
                Q(status=Status.PENDING)
                & ~Q(stage__in=kind.waiting)
                & (
                    Q(started_at__lt=now - RESEND_AFTER)
                    | Q(started_at__isnull=True, created_at__lt=now - RESEND_AFTER)
                )
            )
        )
        for job in lost:
            cap = kind.max_attempts
            if job.status == Status.RUNNING and cap is not None and job.attempts >= cap:
                message = f"the worker stopped {job.attempts} times while importing this file"
                if EmbeddingImport.objects.filter(pk=job.pk, status=Status.RUNNING).update(
                    status=Status.FAILED, error=message, finished_at=now
                ):
                    upload_files_remove(job)
                    failed += 1
                continue
            if job.status == Status.PENDING:  # remember the resend: once per RESEND_AFTER
                EmbeddingImport.objects.filter(pk=job.pk).update(started_at=now)
            import_enqueue(job.pk, kind.task)
            resent += 1
    return resent, failed


def _old(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime < cutoff
    except OSError:
        return False


def _leftovers() -> int:
    """Delete upload folders and matrix files nothing refers to, older than the expiry."""
    cutoff = time.time() - settings.UPLOAD_PENDING_HOURS * 3600
    removed = 0
    uploads = Path(default_storage.path("uploads"))
    if uploads.is_dir():
        live = set()
        for name in EmbeddingImport.objects.filter(
            status__in=[Status.PENDING, Status.RUNNING]
        ).values_list("file", flat=True):
            parts = Path(name).parts
            if len(parts) > 1 and parts[0] == "uploads":
                live.add(parts[1])
        for entry in uploads.iterdir():
            if entry.name not in live and _old(entry, cutoff):
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
                removed += 1
    matrices = Path(default_storage.path("spaces"))
    if matrices.is_dir():
        used = {Path(n).name for n in EmbeddingSpace.objects.values_list("matrix", flat=True)}
        for entry in matrices.iterdir():
            if entry.is_file() and entry.name not in used and _old(entry, cutoff):
                entry.unlink(missing_ok=True)
                removed += 1
    return removed


def uploads_sweep(kinds: Sequence[Resumable], *, now=None) -> dict:
    """One sweep; returns what it did (counts)."""
    now = now or timezone.now()
    expired = _expire(now)
    resent, failed = _resume(kinds, now)
    removed = _leftovers()
    if expired or resent or failed or removed:
        logger.info(
            "spaces sweep: %s expired, %s resent, %s failed, %s leftovers removed",
            expired,
            resent,
            failed,
            removed,
        )
    return {"expired": expired, "resent": resent, "failed": failed, "removed": removed}
