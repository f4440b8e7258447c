"""Helpers for tests that talk to real Celery workers: point this process's Celery app at a
broker for a block, and give a worker process the URL of the test database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from kombu import pools as kombu_pools

from .conftest import require


def _drop_connections(app) -> None:
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
