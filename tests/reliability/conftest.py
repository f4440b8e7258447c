"""The load and fault runs' short forms: real PostgreSQL and redis-server binaries required."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.stack import PG_ADMIN_URL
from tests.conftest import ROOT, require, subprocess_env


def _postgres_can_create_databases() -> bool:
    import psycopg

    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=2) as conn:
            row = conn.execute(
                "SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
            return bool(row and row[0])
    except psycopg.Error:
        return False


@pytest.fixture
def run_module(tmp_path):
    """``run(module, *args) -> (result JSON, output)`` for ``python -m loadtest.<module>``."""
    require(shutil.which("redis-server") is not None, "redis-server is not installed")
    require(
        _postgres_can_create_databases(),
        f"PostgreSQL at {PG_ADMIN_URL} is not reachable (or may not create databases)",
    )

    def run(module: str, *args: str, timeout: float = 180) -> tuple[dict, str]:
        out = tmp_path / f"{module}.json"
        proc = subprocess.run(
            [sys.executable, "-m", f"loadtest.{module}", *args, "--json", str(out)],
            cwd=ROOT,
            env=subprocess_env(DATABASE_URL=None, REDIS_URL=None),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-4000:]
        return json.loads(Path(out).read_text()), output

    return run
