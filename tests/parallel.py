"""Loaded with ``-p tests.parallel`` (pyproject's addopts), before Django's settings: under
pytest-xdist (``make test`` runs two workers) each worker gets Redis databases of its own — the
broker and cache of ``REDIS_URL`` moved from database N to N + 1 + the worker's number — and its
own ``VAR_DIR``, so tasks queued by one worker's tests are never consumed by a Celery worker
another one started. The test databases are per worker already (pytest-django's suffix)."""

from __future__ import annotations

import os
import re
from pathlib import Path

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, … (unset without xdist)


def _isolate(worker: str) -> None:
    number = int(worker.removeprefix("gw"))
    url = os.environ.get("REDIS_URL", "")
    found = re.fullmatch(r"(rediss?://[^/]+)(?:/(\d+))?", url)
    if found:
        database = int(found[2] or 0) + 1 + number
        os.environ["REDIS_URL"] = f"{found[1]}/{database}"
        import redis  # a fresh database for this worker's queues

        redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    base = Path(os.environ.get("VAR_DIR") or Path(__file__).resolve().parent.parent / "var")
    own = base / f"xdist-{worker}"
    own.mkdir(parents=True, exist_ok=True)
    os.environ["VAR_DIR"] = str(own)


if WORKER.startswith("gw"):
    _isolate(WORKER)
