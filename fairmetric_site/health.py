"""What ``/healthz`` (liveness) and ``/readyz`` (readiness) report.

``/healthz`` — each dependency (database, cache, task broker) and the verdict:

* ``ok`` (200) — everything answers;
* ``degraded`` (200) — the database answers but the cache or the broker does not: pages, the
  API and logins keep working (sessions from the database, limits from their database
  fallback), but what needs Redis waits (refits and imports are not queued, nothing is cached);
  a load balancer should keep sending traffic, a monitor should page someone;
* ``unhealthy`` (503) — the database does not answer: nothing works.

``/readyz`` — whether this instance should get traffic that needs the worker: 200 ``ready`` when
the database and the task broker answer, else 503 ``not ready`` (an orchestrator's readiness
probe: while Redis or the broker is down, uploads, imports and refits cannot be queued, so a
load balancer holds the instance back, while ``/healthz`` keeps saying the process lives and
should not be restarted). The cache alone down is ready: sessions and limits have their
database fallback.

Each check gives up after ``REDIS_TIMEOUT_MS`` (the cache and a Redis broker), so the page
answers in milliseconds whatever is down. No error text is shown (it could name hosts).
"""

from __future__ import annotations

import logging
import uuid

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from kombu import Connection

logger = logging.getLogger(__name__)

OK, DOWN = "ok", "unreachable"


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        logger.warning("healthz: the database does not answer", exc_info=True)
        return DOWN
    return OK


def _cache() -> str:
    key, value = "healthz", uuid.uuid4().hex
    try:
        cache.set(key, value, 30)
        if cache.get(key) != value:
            return DOWN
    except Exception:
        logger.warning("healthz: the cache does not answer", exc_info=True)
        return DOWN
    return OK


def _broker() -> str:
    url = settings.CELERY_BROKER_URL
    try:
        if url.startswith(("redis://", "rediss://")):
            seconds = settings.REDIS_TIMEOUT_MS / 1000
            client = redis.Redis.from_url(
                url, socket_connect_timeout=seconds, socket_timeout=seconds, retry=None
            )
            try:
                client.ping()
            finally:
                client.close()
        else:
            with Connection(
                url,
                transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS,
                connect_timeout=settings.REDIS_TIMEOUT_MS / 1000,
            ) as conn:
                conn.ensure_connection(max_retries=1)
    except Exception:
        logger.warning("healthz: the task broker does not answer", exc_info=True)
        return DOWN
    return OK


def health() -> tuple[dict, int]:
    """(the report, its HTTP status)."""
    checks = {"database": _database(), "cache": _cache(), "broker": _broker()}
    if checks["database"] != OK:
        status, code = "unhealthy", 503
    elif all(v == OK for v in checks.values()):
        status, code = "ok", 200
    else:
        status, code = "degraded", 200
    return {"status": status, "checks": checks, "database": connection.vendor}, code


def readiness() -> tuple[dict, int]:
    """(the readiness report, its HTTP status): 503 unless the database and the broker answer."""
    checks = {"database": _database(), "broker": _broker()}
    ready = all(v == OK for v in checks.values())
    return {"status": "ready" if ready else "not ready", "checks": checks}, 200 if ready else 503
