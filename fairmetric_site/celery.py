"""The Celery app: settings from Django's (namespace ``CELERY_``), tasks autodiscovered.

Every worker also sweeps (:class:`SweepStep`): it queues ``learning.sweep``, ``spaces.sweep``
and ``annotation.sweep`` (feedback imports, webhook deliveries whose task was lost) when it
starts and every ``LEARNING_SWEEP_SECONDS`` while it runs, so recovery needs no separately
started beat process: a worker killed mid-fit leaves a ``fitting`` row and a cleared refit
marker, and the next worker to start (or any running one, within a sweep period) re-queues that
study; an upload left pending expires and a lost import is resumed (``spaces/sweep.py``).
"""

import logging
import os
import sys
from pathlib import Path

from celery import Celery, bootsteps
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

app = Celery("fairmetric")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def ensure_embedded_dirs() -> None:
    """Create the folders of the embedded broker and result store (no-op with Redis)."""
    folders = []
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        folders += [
            options["data_folder_in"],
            options["data_folder_out"],
            options["control_folder"],
        ]
    if settings.CELERY_RESULT_BACKEND.startswith("file://"):
        folders.append(settings.CELERY_RESULT_BACKEND.removeprefix("file://"))
    for folder in folders:
        Path(folder).mkdir(parents=True, exist_ok=True)


@app.on_after_configure.connect
def _prepare_embedded_dirs(sender, **kwargs) -> None:
    ensure_embedded_dirs()


logger = logging.getLogger(__name__)
SWEEP_TASK = "learning.sweep"  # by name: the site's app module imports no app's tasks
SWEEP_TASKS = (SWEEP_TASK, "spaces.sweep", "annotation.sweep")  # refits; uploads; imports, webhooks


def sweep_send() -> None:
    """Queue the refit, uploads and webhook sweeps on the default queue; a broker error is
    logged, not raised (the next period tries again)."""
    for task in SWEEP_TASKS:
        try:
            app.send_task(task, queue=settings.CELERY_TASK_DEFAULT_QUEUE, ignore_result=True)
        except Exception:
            logger.warning("could not queue the sweep %s", task, exc_info=True)


class SweepStep(bootsteps.StartStopStep):
    """A worker bootstep: one sweep at start-up, then one every ``LEARNING_SWEEP_SECONDS``
    (``WORKER_SWEEP=0`` turns it off, e.g. when a beat process is run instead). Sweeps are
    idempotent (a study already queued or fitting is not refitted twice: the per-study lease and
    the unique version), so several workers sweeping is harmless."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.entry = None

    def start(self, worker):
        if not settings.WORKER_SWEEP:
            return
        sweep_send()
        self.entry = worker.timer.call_repeatedly(
            float(settings.LEARNING_SWEEP_SECONDS), sweep_send
        )

    def stop(self, worker):
        if self.entry is not None:
            self.entry.cancel()
            self.entry = None


app.steps["worker"].add(SweepStep)


def worker_argv(queue: str, hostname: str, *extra: str) -> list[str]:
    """The command line of one solo worker consuming ``queue`` (tests, load runs, benchmarks):
    one name, or several separated by commas (``common.queues.every_queue``: the default queue
    and the dashboards' one)."""
    return [
        *(sys.executable, "-m", "celery", "-A", "fairmetric_site", "worker"),
        *("--pool=solo", "--loglevel=INFO", "-Q", queue, "--hostname", hostname),
        *("--without-gossip", "--without-mingle", *extra),
    ]


@app.task(name="fairmetric.ping")
def ping(value: str = "pong") -> str:
    """A trivial task used by health checks and tests to prove a worker answers."""
    return value
