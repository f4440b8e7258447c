"""The real parts are real: PostgreSQL when configured, Celery workers over Redis and over the
embedded broker (a separate worker process, never eager mode)."""

import os
import subprocess
import sys
import time
from pathlib import Path

from celery import Celery
from django.conf import settings
from django.db import connection

from .conftest import ROOT, require, subprocess_env


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


def test_the_worker_health_check_pings_the_worker_it_names(redis_url, start_worker):
    """compose.yaml's worker health check (docker/worker_health.py) against a real worker."""
    _proc, queue = start_worker(
        REDIS_URL=redis_url, CELERY_BROKER_URL=None, CELERY_RESULT_BACKEND=None
    )
    env = subprocess_env(REDIS_URL=redis_url, CELERY_BROKER_URL=None)
    check = [sys.executable, str(ROOT / "docker" / "worker_health.py")]

    def ask(name: str, env: dict = env) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*check, name], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    deadline = time.monotonic() + 60
    answered = ask(f"{queue}-0")  # start_worker names its first worker <queue>-0@<hostname>
    while answered.returncode != 0 and time.monotonic() < deadline:
        time.sleep(1)
        answered = ask(f"{queue}-0")
    assert answered.returncode == 0, answered.stderr
    nobody = ask(f"{queue}-nobody")
    assert nobody.returncode == 1
    assert "did not answer" in nobody.stderr
    dead_broker = subprocess_env(REDIS_URL="redis://127.0.0.1:1/0", CELERY_BROKER_URL=None)
    stopped = ask(f"{queue}-0", env=dead_broker)
    assert stopped.returncode == 1
    assert "worker health:" in stopped.stderr
