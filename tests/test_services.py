"""The real parts are real: PostgreSQL when configured, Celery workers over Redis and over the
embedded broker (a separate worker process, never eager mode)."""

import os
from pathlib import Path

from celery import Celery
from django.conf import settings
from django.db import connection

from .conftest import require


def test_database_is_the_configured_one(db):
    url = os.environ.get("DATABASE_URL", "")
    require(url.startswith("postgres"), "DATABASE_URL does not point at PostgreSQL")
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert "PostgreSQL" in cursor.fetchone()[0]


def test_settings_never_run_tasks_eagerly_by_default():
    assert settings.CELERY_TASK_ALWAYS_EAGER is False


def test_worker_answers_through_redis(redis_url, start_worker):
    proc, queue = start_worker(
        REDIS_URL=redis_url, CELERY_BROKER_URL=None, CELERY_RESULT_BACKEND=None
    )
    client = Celery(broker=redis_url, backend=redis_url)
    result = client.send_task("fairmetric.ping", args=["through redis"], queue=queue)
    assert result.get(timeout=60) == "through redis"
    assert proc.poll() is None  # a real, separate process that is still running


def test_worker_answers_through_the_embedded_broker(tmp_path: Path, start_worker):
    broker_dir = tmp_path / "broker"
    results = tmp_path / "results"
    results.mkdir()
    proc, queue = start_worker(
        REDIS_URL=None,
        CELERY_BROKER_URL=None,
        EMBEDDED_BROKER_DIR=str(broker_dir),
        CELERY_RESULT_BACKEND=results.as_uri(),
    )
    folder = str(broker_dir / "queue")
    Path(folder).mkdir(parents=True, exist_ok=True)
    client = Celery(
        broker="filesystem://",
        backend=results.as_uri(),
        broker_transport_options={
            "data_folder_in": folder,
            "data_folder_out": folder,
            "control_folder": str(broker_dir / "control"),
            "store_processed": False,
        },
    )
    result = client.send_task("fairmetric.ping", args=["through files"], queue=queue)
    assert result.get(timeout=60) == "through files"
    assert proc.poll() is None
