"""Helpers for tests that talk to real services: point this process's Celery app at a broker for
a block (its broker pools and result backend made anew, before and after), give a worker
process the URL of the test database, a throwaway redis-server on a free port
(``ThrowawayRedis``; the ``private_redis`` fixture in tests/conftest.py), ``wait_for``."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection
from kombu import pools as kombu_pools

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
DEFAULT_LOCAL_REDIS = "redis://127.0.0.1:6379/15"


def require(condition: bool, what: str) -> None:
    """Skip locally when a real service is missing; fail under CI, where it must be there."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{what} (CI=true: real services are required, not skipped)")
    pytest.skip(f"{what}; set it up to run this test (CI runs it)")


def _drop_result_backend(app) -> None:
    """Forget the result backend the app made for the previous settings. Celery caches it per
    thread (``app._local.backend``; ``app._backend_cache`` for a thread-safe one) behind the
    ``app._backend`` property, whose setter needs a backend: assigning None there fails, so the
    two caches are cleared themselves. The old backend's connections are closed first; a Redis
    backend whose server is gone would otherwise be asked (and retried) by the next
    ``send_task``, which subscribes to the task's result."""
    old = app._backend
    if old is None:
        return
    consumer = getattr(old, "result_consumer", None)
    with contextlib.suppress(Exception):
        if consumer is not None and hasattr(consumer, "stop"):
            consumer.stop()  # (Redis: closes its subscription)
    with contextlib.suppress(Exception):
        client = old.__dict__.get("client")  # (a cached property: not made here if never used)
        if client is not None:
            client.connection_pool.disconnect()
    app._backend_cache = None
    if hasattr(app._local, "backend"):
        del app._local.backend


def _drop_connections(app) -> None:
    _drop_result_backend(app)
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
    # kombu keeps producer pools in a global registry keyed by connection: without this a later
    # block for the same URL would reuse a pool whose connections were closed above.
    kombu_pools.reset()


@contextmanager
def app_pointed_at(
    broker_url: str, *, result_backend: str | None = None, transport_options: dict | None = None
) -> Iterator:
    """This process's Celery app sends to ``broker_url`` (results to ``result_backend``, by
    default the same URL) for the duration of the block; the settings are restored after."""
    from fairmetric_site.celery import app

    keys = ("broker_url", "result_backend", "broker_transport_options")
    saved = {key: app.conf[key] for key in keys}
    _drop_connections(app)
    app.conf.update(
        broker_url=broker_url,
        result_backend=result_backend or broker_url,
        broker_transport_options=transport_options or {},
    )
    try:
        yield app
    finally:
        _drop_connections(app)
        app.conf.update(saved)


def worker_database_url() -> str:
    """The test database as a URL a worker process can open."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        user, host = db.get("USER") or "postgres", db.get("HOST") or "127.0.0.1"
        port = db.get("PORT") or 5432
        password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
        return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"
    name = str(db["NAME"])
    require(
        connection.vendor == "sqlite" and "memory" not in name and name.startswith("/"),
        "the test database is not shareable with a worker process",
    )
    return f"sqlite:///{name}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThrowawayRedis:
    """A private redis-server on a free port that a test may stop and start again."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self.answers, 10, "the throwaway Redis to answer")

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def wait_for(predicate: Callable[[], object], timeout: float, what: str, *, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
