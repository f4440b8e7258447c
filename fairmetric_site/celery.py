"""The Celery app: settings from Django's (namespace ``CELERY_``), tasks autodiscovered."""

import os
import sys
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

app = Celery("fairmetric")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def ensure_embedded_dirs() -> None:
    """Create the folders of the embedded broker and result store (no-op with Redis)."""
    from django.conf import settings

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


def worker_argv(queue: str, hostname: str, *extra: str) -> list[str]:
    """The command line of one solo worker consuming ``queue`` (tests, load runs, benchmarks)."""
    return [
        *(sys.executable, "-m", "celery", "-A", "fairmetric_site", "worker"),
        *("--pool=solo", "--loglevel=INFO", "-Q", queue, "--hostname", hostname),
        *("--without-gossip", "--without-mingle", *extra),
    ]


@app.task(name="fairmetric.ping")
def ping(value: str = "pong") -> str:
    """A trivial task used by health checks and tests to prove a worker answers."""
    return value
