"""Celery tasks of the annotation app (autodiscovered here): the import page's feedback imports
(``annotation.setup.imports.jobs``) and their sweep."""

from __future__ import annotations

from celery import shared_task

from annotation.setup.imports import jobs


@shared_task(
    bind=True,
    name=jobs.IMPORT_TASK,
    acks_late=True,  # idempotent: the run claims its row; a redelivery finds it claimed or done
    reject_on_worker_lost=True,
    max_retries=5,
)
def feedback_import_task(self, import_id: int) -> str:
    """Store the confirmed feedback import ``import_id``."""
    result = jobs.import_run(import_id=import_id)
    if result == "busy":  # another worker holds it, or one died: look again after the lease
        raise self.retry(countdown=jobs.LEASE.total_seconds())
    return result


@shared_task(name=jobs.SWEEP_TASK, ignore_result=True, soft_time_limit=240, time_limit=300)
def feedback_imports_sweep_task() -> dict:
    """Re-send lost feedback imports, expire old previews."""
    return jobs.imports_sweep()
