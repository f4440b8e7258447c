"""Loaded with ``-p tests.parallel`` (pyproject's addopts), before Django's settings: under
pytest-xdist (``make test`` runs three workers: Makefile) each worker gets Redis databases of
its own — the broker and cache of ``REDIS_URL`` moved from database N to N + 1 + the worker's
number — and its own ``VAR_DIR``, so tasks queued by one worker's tests are never consumed by a Celery worker
another one started. The test databases are per worker already (pytest-django's suffix).

Each worker, and every process its tests start, also does its linear algebra on one thread
(``OMP_NUM_THREADS`` and the like, unless set): workers each running OpenBLAS with a thread
per core oversubscribe the two cores, and the threads spin waiting for each other — measured:
two runs of the validity and credit-study tests side by side took 67 s with the default threads
and 27 s with one each (23 s alone)."""

from __future__ import annotations

import os
import re
import sys
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


BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread() -> None:
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")
    if "numpy" in sys.modules:  # loaded before this plugin: limit its pools now
        from threadpoolctl import threadpool_limits

        threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]))


if WORKER.startswith("gw"):
    _isolate(WORKER)
    _one_blas_thread()
