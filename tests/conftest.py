"""Shared fixtures. Real services are used when reachable; under CI=true they must be."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from common.queues import every_queue
from fairmetric_site.celery import worker_argv

from .celery_support import IN_CI, ThrowawayRedis, require

__all__ = ["IN_CI", "require"]  # imported from here by the test packages

DEFAULT_LOCAL_REDIS = "redis://127.0.0.1:6379/15"

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def private_redis(tmp_path) -> Iterator[ThrowawayRedis]:
    """A redis-server of this test's own on a free port (``.url``; ``.stop()``/``.start()``)."""
    require(shutil.which("redis-server") is not None, "redis-server is not installed")
    server = ThrowawayRedis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    """MEDIA_ROOT in this test's own folder (created), and the local work and cache folders of
    media storage (common/storage.py) beside it."""
    media = tmp_path / "media"
    media.mkdir(exist_ok=True)
    settings.MEDIA_ROOT = media
    settings.STORAGE_WORK_DIR = tmp_path / "work"
    settings.STORAGE_CACHE_DIR = tmp_path / "storage-cache"
    return media


def redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def redis_url() -> str:
    """REDIS_URL when set, else the local server's db 15 when it answers."""
    url = os.environ.get("REDIS_URL") or DEFAULT_LOCAL_REDIS
    require(redis_reachable(url), f"Redis is not reachable at {url}")
    return url


def subprocess_env(**overrides: str | None) -> dict[str, str]:
    """The current environment with overrides (None removes a variable)."""
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_benchmark(script: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``benchmarks/<script> args`` in a subprocess on its own throwaway SQLite and media
    folder (the benchmarks make them when DATABASE_URL and MEDIA_ROOT are unset); text output."""
    return subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        cwd=ROOT,
        env=subprocess_env(DATABASE_URL=None, MEDIA_ROOT=None),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen, str]]]:
    """Start a real Celery worker process consuming a queue of its own.

    Returns ``start(*extra_args, queue=None, consume=None, **env_overrides) -> (process,
    queue)``; pass ``queue`` to consume a given queue (e.g. to restart a worker on the same one)
    and extra worker arguments such as ``--beat``. The worker consumes ``queue`` and its
    dashboards' and audits' queues (``common/queues.py``), or the ``-Q`` value ``consume`` when
    given (a worker for one of them). Workers are stopped at teardown.
    """
    procs: list[subprocess.Popen] = []

    def start(
        *extra_args: str,
        queue: str | None = None,
        consume: str | None = None,
        **overrides: str | None,
    ) -> tuple[subprocess.Popen, str]:
        queue = queue or f"test-{uuid.uuid4().hex[:10]}"
        log = open(tmp_path / f"{queue}-{len(procs)}.log", "w")  # noqa: SIM115 - with the process
        proc = subprocess.Popen(
            worker_argv(consume or every_queue(queue), f"{queue}-{len(procs)}@%h", *extra_args),
            cwd=ROOT,
            env=subprocess_env(**overrides),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        return proc, queue

    yield start
    for proc in procs:
        proc.terminate()
    deadline = time.monotonic() + 10
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> None:
    """SQLite tests use a per-session file, not memory, so worker processes can share it.

    (tests/learning/test_refit_worker.py runs real Celery workers against the test database;
    PostgreSQL test databases are shareable as they are.)
    """
    import tempfile

    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3") and not database.get("TEST", {}).get("NAME"):
        name = Path(tempfile.gettempdir()) / f"fairmetric-test-{os.getpid()}.sqlite3"
        database.setdefault("TEST", {})["NAME"] = str(name)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup) -> Iterator[None]:
    """pytest-django's test databases, and before they are dropped every connection this
    process still holds closed. Django keeps a connection per thread and per context (asgiref's
    ``Local`` on contextvars), and its teardown closes only the one of the context it runs in;
    one left open by another (a request thread of the live server, a context the browser
    driver ran code in) made PostgreSQL refuse the drop ("database … is being accessed by
    other users"), and the test database stayed behind."""
    yield
    close_every_connection()


def close_every_connection() -> int:
    """Close the open connection of every Django database wrapper in this process, whichever
    thread or context made it (the driver's own close: Django's refuses another thread's
    wrapper); how many were open."""
    import gc

    from django.db.backends.base.base import BaseDatabaseWrapper

    # type(), not isinstance(): a dead weak proxy among the objects raises on __class__
    wrappers = [o for o in gc.get_objects() if issubclass(type(o), BaseDatabaseWrapper)]
    open_ones = [w for w in wrappers if w.connection is not None]
    for wrapper in open_ones:
        wrapper.connection.close()
        wrapper.connection = None
    return len(open_ones)


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    """MD5 for the tests' passwords: the production hasher (PBKDF2, ~0.3-0.6 s a password on
    these cores) made every user a test creates and every login cost that much again. A test
    about the hasher's work sets its own (tests/security/test_setup_races.py)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _private_cache(settings, tmp_path) -> None:
    """Each test gets an empty cache of its own (rate-limit counters must not leak between
    tests, nor into a shared Redis or VAR_DIR; nor refit caches), and no judgment rate limit:
    tests post answers faster than people do (tests/security/test_rate_limits.py sets the limit
    it tests)."""
    settings.JUDGMENT_RATE = 0
    settings.REFIT_CACHE_DIR = tmp_path / "refit-cache"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"test-{uuid.uuid4().hex}",
        }
    }


@pytest.fixture(autouse=True)
def _fresh_process_caches() -> Iterator[None]:
    """The per-process caches keyed by a study's id (the item pool, the oldest judgment id,
    the group suggestions' random draws) emptied around each test: a test database rolled back
    gives the next test's study the same id (SQLite reuses ids), and a stale pool offered items
    of another space. Also the project's Celery app made this thread's current one again: the
    app code sends through ``celery.current_app``, and a client ``Celery(...)`` a test makes
    becomes current on creation (a test recording ``app.send_task`` then records nothing)."""
    from annotation.groups.suggestions import suggestions_cache_clear
    from annotation.labelling import sampling
    from annotation.selectors import pool_cache_clear
    from fairmetric_site.celery import app

    def clear() -> None:
        pool_cache_clear()
        suggestions_cache_clear()
        sampling.first_id_cache_clear()
        app.set_current()

    clear()
    yield
    clear()


def pytest_collection_modifyitems(config, items):
    """The modules holding a slow or browser test first, the order otherwise kept (a stable
    sort after pytest-django's): ``make test`` hands whole files to its workers in the order
    their tests first appear (``--dist loadfile``), so the long ones start early and the many
    short ones even out the end."""
    marks = ("slow", "browser")
    long = {item.path for item in items if any(item.get_closest_marker(m) for m in marks)}
    items.sort(key=lambda item: item.path not in long)
