"""Wait until the database answers, and with ``--migrated`` until every migration is applied
(the ``migrate`` role applies them: the other roles start after it, whichever starts first).

    python3 docker/wait_db.py [--timeout SECONDS] [--migrated]

Exit 0 once it holds, 1 when ``--timeout`` passes first (saying what it waited for). Run by
docker/entrypoint.sh before each role; it needs only the settings (``DATABASE_URL``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def pending_migrations() -> list[str]:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def state(migrated: bool) -> str:
    """Empty when ready; otherwise what is still awaited."""
    from django.db import connection

    try:
        connection.ensure_connection()
        if migrated:
            pending = pending_migrations()
            if pending:
                return f"{len(pending)} migration(s) not applied yet, e.g. {pending[0]}"
        return ""
    except Exception as exc:  # noqa: BLE001 - the database is not up yet: any driver error
        return f"database: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
    finally:
        connection.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--migrated", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    import django

    django.setup()
    deadline = time.monotonic() + args.timeout
    last = None
    while True:
        waiting = state(args.migrated)
        if not waiting:
            return 0
        if waiting != last:
            print(f"wait_db: waiting ({waiting})", file=sys.stderr, flush=True)
            last = waiting
        if time.monotonic() >= deadline:
            print(f"wait_db: gave up after {args.timeout:g} s: {waiting}", file=sys.stderr)
            return 1
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
