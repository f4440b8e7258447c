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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePosixPath

from django.conf import settings
from django.core.files.storage import default_storage
from django.db.models import Q
from django.utils import timezone

from common import storage
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


def _old(modified, cutoff) -> bool:
    return modified is not None and modified < cutoff


def _leftovers() -> int:
    """Delete upload folders and matrix files nothing refers to, older than the expiry (through
    the storage API: the local folder or the bucket alike)."""
    cutoff = timezone.now() - timedelta(hours=settings.UPLOAD_PENDING_HOURS)
    removed = 0
    live = set()
    for name in EmbeddingImport.objects.filter(
        status__in=[Status.PENDING, Status.RUNNING]
    ).values_list("file", flat=True):
        parts = PurePosixPath(name).parts
        if len(parts) > 1 and parts[0] == "uploads":
            live.add(parts[1])
    newest: dict[str, datetime | None] = {}
    for name, modified in storage.files_under("uploads"):
        parts = PurePosixPath(name).parts
        if len(parts) > 2 and parts[1] not in live:  # uploads/<folder>/...: newest file counts
            seen = newest.get(parts[1], modified)
            newest[parts[1]] = max(seen, modified) if seen and modified else None
        elif len(parts) == 2 and _old(modified, cutoff):  # a stray file in uploads/
            default_storage.delete(name)
            removed += 1
    for folder, modified in newest.items():
        if _old(modified, cutoff):
            storage.folder_remove(f"uploads/{folder}")
            removed += 1
    removed += storage.work_prune(cutoff.timestamp())  # this machine's, left by a killed worker
    used = {PurePosixPath(n).name for n in EmbeddingSpace.objects.values_list("matrix", flat=True)}
    for name, modified in storage.files_under("spaces"):
        if PurePosixPath(name).name not in used and _old(modified, cutoff):
            default_storage.delete(name)
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
