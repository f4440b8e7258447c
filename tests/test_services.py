"""The real parts are real: PostgreSQL when configured, Celery workers over Redis and over the
embedded broker (a separate worker process, never eager mode). The test databases can be
dropped: before pytest-django drops them, ``tests/conftest.py: close_every_connection`` closes
every connection the process still holds, also one another thread or context opened, which
Django's own teardown does not see and which made PostgreSQL refuse the drop."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection, connections

from .conftest import ROOT, close_every_connection, require, subprocess_env


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
    client = Celery(broker=redis_url, backend=redis_url, set_as_current=False)
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
        set_as_current=False,
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


@pytest.mark.django_db(transaction=True)
def test_a_connection_another_thread_left_open_is_closed_before_the_drop():
    kept = []

    def query() -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        kept.append(connections["default"])  # the thread ends, its connection stays open

    worker = threading.Thread(target=query)
    worker.start()
    worker.join()
    (other,) = kept
    assert other is not connections["default"]
    assert other.connection is not None
    assert close_every_connection() >= 1
    assert other.connection is None
    assert connections["default"].connection is None
    with connections["default"].cursor() as cursor:  # this thread's reconnects as usual
        cursor.execute("SELECT 1")


def test_a_dead_weak_proxy_among_the_objects_does_not_stop_it():
    import gc
    import weakref

    class Gone:
        pass

    thing = Gone()
    proxies = [weakref.proxy(thing)]  # a list is tracked by gc; the proxy in it outlives thing
    del thing
    gc.collect()
    assert close_every_connection() >= 0
    assert len(proxies) == 1
