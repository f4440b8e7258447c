"""The hook annotation calls when feedback changes: queue a refit after the commit.

Annotation services call :func:`refit_request` inside their transaction; the message is sent
only once the transaction commits (``transaction.on_commit``), so a rolled-back write never
triggers a refit and a refit never sees uncommitted data. The task is addressed by name, so
the web process does not import the worker's code.
"""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)

REFIT_TASK = "learning.refit_study"


def refit_request(*, study_id: int) -> None:
    """Queue a refit of ``study_id`` after the current transaction commits.

    A broker that is down must never fail the annotator's request: the answer is already
    committed and the periodic sweep picks the study up later.
    """

    def send() -> None:
        from fairmetric_site.celery import app

        try:
            app.send_task(REFIT_TASK, kwargs={"study_id": study_id})
        except Exception:  # noqa: BLE001 - any broker failure; the sweep recovers
            logger.warning("could not queue a refit of study %s; the sweep will", study_id)

    transaction.on_commit(send)
