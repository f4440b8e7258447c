"""Deleting a space: by its owner or staff, refused while a study uses it, whole or not at all.

:func:`space_deletion_plan` says what would go with the space — its items, tags, the WEAT
results computed on it, the uploads it came from and their files — or which studies use it
(the database keeps a study's space: ``Study.space`` is ``PROTECT``). :func:`space_delete`
deletes the rows in one transaction, audited (``space.delete``), and its files (the matrix,
the uploads' folders) only once that transaction has committed: a failed deletion leaves
everything as it was; a crash between the commit and the file removal leaves files the upload
sweep (``spaces/sweep.py``) removes as leftovers.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass

from django.core.files.storage import default_storage
from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models import ProtectedError, RestrictedError
from django.db.models.deletion import Collector

from audit.services import Action as AuditAction
from audit.services import audit_record
from common.access import is_staff
from common.errors import Conflict, NotAllowed, locked_or_gone

from .models import EmbeddingImport, EmbeddingSpace
from .uploads import upload_files_remove


@dataclass(frozen=True)
class DeletionPlan:
    """What deleting a space means: ``studies`` using it (then it is refused), else ``goes``:
    (what, how many) of every row that goes with it, and the files removed."""

    studies: list[str]
    goes: list[tuple[str, int]]
    files: list[str]

    @property
    def refused(self) -> bool:
        return bool(self.studies)


def may_delete_space(user, space: EmbeddingSpace) -> bool:
    """The space's owner and staff."""
    return is_staff(user) or (space.owner_id is not None and space.owner_id == user.pk)


def _imports(space: EmbeddingSpace):
    return EmbeddingImport.objects.filter(space=space)


def space_deletion_plan(*, space: EmbeddingSpace) -> DeletionPlan:
    studies = sorted(space.studies.values_list("name", flat=True))  # Study.space's reverse
    if studies:
        return DeletionPlan(studies=studies, goes=[], files=[])
    collector = Collector(using=DEFAULT_DB_ALIAS)
    collector.collect([space])
    jobs = list(_imports(space))
    if jobs:
        collector.collect(jobs)
    counts: Counter[str] = Counter()
    for model, instances in collector.data.items():
        counts[str(model._meta.verbose_name_plural)] += len(instances)
    for queryset in collector.fast_deletes:
        counts[str(queryset.model._meta.verbose_name_plural)] += queryset.count()
    files = [space.matrix.name] if space.matrix else []
    for job in jobs:
        files += [f.name for f in (job.file, job.extra_file) if f and f.name]
    goes = sorted(((what, n) for what, n in counts.items() if n), key=lambda x: (-x[1], x[0]))
    return DeletionPlan(studies=[], goes=goes, files=files)


def space_delete(*, space: EmbeddingSpace, actor) -> DeletionPlan:
    """Delete ``space`` with everything that goes with it (see the module); NotAllowed unless
    ``actor`` is its owner or staff; Conflict (naming them) while studies use it."""
    if not may_delete_space(actor, space):
        raise NotAllowed("Only the space's owner or staff may delete it.")
    with transaction.atomic():
        space = locked_or_gone(  # 30 deletes at once: one deletes, the others find it gone
            EmbeddingSpace.objects.filter(pk=space.pk), "This space was deleted already."
        )
        plan = space_deletion_plan(space=space)
        if plan.refused:
            raise Conflict(_refusal(space, plan.studies))
        jobs = list(_imports(space))
        matrix = space.matrix.name if space.matrix else ""
        audit_record(
            action=AuditAction.SPACE_DELETE,
            target=space,
            actor=actor,
            detail={
                "name": space.name,
                "kind": space.kind,
                "sha256": space.sha256,
                "items": space.item_count,
                "removed": dict(plan.goes),
                "files": plan.files,
            },
        )
        try:
            for job in jobs:
                job.delete()
            space.delete()
        except (ProtectedError, RestrictedError) as error:  # a study attached meanwhile
            names = sorted({str(o) for o in error.protected_objects if hasattr(o, "space_id")})
            raise Conflict(_refusal(space, names or ["a study"])) from None
        transaction.on_commit(lambda: _files_remove(matrix, jobs))
    return plan


def _refusal(space: EmbeddingSpace, studies: list[str]) -> str:
    listed = ", ".join(f"“{name}”" for name in studies)
    return (
        f"“{space.name}” is the space of {len(studies)} "
        f"stud{'y' if len(studies) == 1 else 'ies'} ({listed}): "
        "move or delete them first; nothing was deleted."
    )


def _files_remove(matrix: str, jobs: list[EmbeddingImport]) -> None:
    if matrix:
        with contextlib.suppress(OSError):
            default_storage.delete(matrix)
    for job in jobs:
        with contextlib.suppress(OSError):
            upload_files_remove(job)
