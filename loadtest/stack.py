"""The throwaway stack of a load or fault run, all on 127.0.0.1.

A scratch PostgreSQL database ``fm_load_<pid>`` on the local server (created here, dropped in
:meth:`Stack.stop`), a private ``redis-server`` on a free port (never the shared one on 6379),
gunicorn, one Celery worker (solo pool; it runs the refit sweep itself at start-up and
periodically: no beat process, as in production), one for the dashboard figures' own queue and
one for the model audits' (``common/queues.py``: a refit never waits behind them). Every process runs in
a session of its own, so stopping one stops its children too; the orchestrating process
configures Django for the same database (to migrate, seed and verify).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from common.queues import audit_queue_of, dashboard_queue_of
from fairmetric_site.celery import worker_argv

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("LOAD_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql)


def drop_orphaned_databases() -> list[str]:
    """Drop scratch databases of runs that were killed (``fm_load_<pid>`` whose process is no
    longer a running load or fault run); their processes died with them."""
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT datname FROM pg_database WHERE datname ~ '^fm_load_[0-9]+$'"
            )
        ]
    dropped = []
    for name in names:
        pid = name.rsplit("_", 1)[1]
        try:
            alive = b"loadtest" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            alive = False
        if not alive:
            pg_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            dropped.append(name)
    return dropped


@dataclass
class Stack:
    """Start with :meth:`start`, stop (and drop everything) with :meth:`stop`."""

    web_workers: int = 3
    web_threads: int = 4
    lease_seconds: int = 30
    sweep_seconds: int = 60
    extra_env: dict[str, str] = field(default_factory=dict)
    keep: bool = False  # keep the scratch folder (logs) after stopping
    db_name: str = field(default_factory=lambda: f"fm_load_{os.getpid()}")
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fm-load-")))
    redis_port: int = field(default_factory=free_port)
    web_port: int = field(default_factory=free_port)
    web_hosts: int = 1  # gunicorn masters ("machines") sharing the database and Redis
    extra_web_ports: list[int] = field(default_factory=list)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _db_created: bool = False
    _worker_starts: int = 0

    @property
    def pg_url(self) -> str:
        """The scratch database on the server of ``LOAD_PG_ADMIN_URL``."""
        return urlunsplit(urlsplit(PG_ADMIN_URL)._replace(path=f"/{self.db_name}"))

    @property
    def database_url(self) -> str:  # the same, as Django's settings take it
        return self.pg_url.replace("postgresql://", "postgres://", 1)

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis_url,
                "CELERY_BROKER_URL": "",
                "CELERY_RESULT_BACKEND": "",
                "CELERY_TASK_DEFAULT_QUEUE": f"load-{self.db_name}",
                "MEDIA_ROOT": str(self.scratch / "media"),
                "VAR_DIR": str(self.scratch / "var"),
                "STATIC_ROOT": str(self.scratch / "static"),
                # Production settings, served over plain HTTP on the loopback interface.
                "DEBUG": "0",
                "SECRET_KEY": env_secret(),
                "SECURE_SSL_REDIRECT": "0",
                "SESSION_COOKIE_SECURE": "0",
                "CSRF_COOKIE_SECURE": "0",
                "SECURE_HSTS_SECONDS": "0",
                "LOG_LEVEL": "WARNING",
                "LEARNING_LEASE_SECONDS": str(self.lease_seconds),
                "LEARNING_SWEEP_SECONDS": str(self.sweep_seconds),
                "LEARNING_BLAS_THREADS": "1",
                "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
            }
        )
        env.pop("CELERY_TASK_ALWAYS_EAGER", None)
        env.update(self.extra_env)
        return env

    # --- lifecycle ---------------------------------------------------------------------------

    def start_database(self) -> None:
        """Create the scratch database and point this process's Django at it (not started)."""
        drop_orphaned_databases()
        pg_admin(f"CREATE DATABASE {self.db_name}")
        self._db_created = True
        (self.scratch / "static").mkdir(exist_ok=True)
        os.environ.update(self.env())

    def start_services(self) -> None:
        self.start_redis()
        self.start_worker()
        self.start_dashboards_worker()
        self.start_audits_worker()
        self.start_web()

    def stop(self) -> None:
        for name in list(self.procs):
            self._stop(name)
        if self._db_created:
            try:
                from django.db import connections

                connections.close_all()
            except Exception:  # noqa: BLE001 - Django may not be set up
                pass
            pg_admin(f"DROP DATABASE IF EXISTS {self.db_name} WITH (FORCE)")
            self._db_created = False
        if not self.keep:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.scratch / f"{name}.log", "a")  # noqa: SIM115 - lives with the process
        proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        self.procs[name] = proc
        return proc

    def _stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def start_redis(self) -> None:
        redis_bin = shutil.which("redis-server")
        if not redis_bin:
            raise SystemExit("redis-server is not installed")
        # No persistence: a restart loses every queued message, the hardest case for refits.
        self._spawn(
            "redis",
            [
                redis_bin,
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.scratch),
            ],
        )
        _wait_for(lambda: _redis_ping(self.redis_url), 10, "redis-server")

    def restart_redis(self, down_seconds: float = 1.0) -> None:
        self._stop("redis")
        time.sleep(down_seconds)
        self.start_redis()

    def start_worker(self) -> subprocess.Popen:
        self._worker_starts += 1
        queue = self.env()["CELERY_TASK_DEFAULT_QUEUE"]
        return self._spawn(
            "worker",
            worker_argv(queue, f"{queue}-{self._worker_starts}@%h", "--without-heartbeat"),
        )

    def start_dashboards_worker(self) -> subprocess.Popen:
        """The worker of the dashboard figures' queue (never killed by the fault run)."""
        queue = dashboard_queue_of(self.env()["CELERY_TASK_DEFAULT_QUEUE"])
        return self._spawn("dashboards", worker_argv(queue, f"{queue}@%h", "--without-heartbeat"))

    def start_audits_worker(self) -> subprocess.Popen:
        """The worker of the model audits' queue (never killed by the fault run)."""
        queue = audit_queue_of(self.env()["CELERY_TASK_DEFAULT_QUEUE"])
        return self._spawn("audits", worker_argv(queue, f"{queue}@%h", "--without-heartbeat"))

    def pause(self, name: str, paused: bool = True) -> None:
        """SIGSTOP (``paused``) or SIGCONT a process group: a worker busy for as long as wanted."""
        os.killpg(self.procs[name].pid, signal.SIGSTOP if paused else signal.SIGCONT)

    def kill_worker(self) -> None:
        """SIGKILL the worker (no chance to clean up), as a crash or the OOM killer would."""
        proc = self.procs.pop("worker")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    @property
    def web_ports(self) -> list[int]:
        return [self.web_port, *self.extra_web_ports]

    def start_web(self) -> None:
        while len(self.extra_web_ports) < self.web_hosts - 1:
            self.extra_web_ports.append(free_port())
        for n, port in enumerate(self.web_ports):
            self._start_gunicorn("web" if n == 0 else f"web{n + 1}", port)

    def _start_gunicorn(self, name: str, port: int) -> None:
        self._spawn(
            name,
            [
                sys.executable,
                "-m",
                "gunicorn",
                "fairmetric_site.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(self.web_workers),
                "--worker-class",
                "gthread",
                "--threads",
                str(self.web_threads),
                "--keep-alive",
                "75",
                "--backlog",
                "2048",
                "--timeout",
                "60",
                "--graceful-timeout",
                "10",
                "--log-level",
                "warning",
            ],
        )
        _wait_for(lambda: _http_up(port), 60, "gunicorn")

    def check_alive(self) -> list[str]:
        """Names of processes that died on their own."""
        return [name for name, proc in self.procs.items() if proc.poll() is not None]

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.scratch / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


_SECRET = secrets.token_urlsafe(48)


def env_secret() -> str:
    return _SECRET


def _die_with_parent() -> None:
    """In the child: SIGTERM when the orchestrating process dies, even by SIGKILL (Linux), so
    a killed run leaves no gunicorn, worker or redis-server behind. (Linux sends it when the
    spawning *thread* ends: threads that start processes must live as long as the stack.)"""
    import ctypes

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop_on_sigterm() -> None:
    """A SIGTERM to the orchestrator unwinds like Ctrl-C, so the stack is stopped and dropped."""

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SystemExit(f"{what} did not come up within {timeout:.0f} s")


def _redis_ping(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False


def _http_up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(
                b"GET /api/studies/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            return sock.recv(12).startswith(b"HTTP/1.1")
    except OSError:
        return False
