"""A worker service's health check (compose.yaml): the Celery worker of this container answers a
ping over the broker. ``python3 docker/worker_health.py NAME`` pings ``NAME@<hostname>``, the
name docker/entrypoint.sh starts it with (``--hostname=NAME@%h``), over ``CELERY_BROKER_URL``
(else ``REDIS_URL``), as the app's settings choose it. It loads Celery only, not Django (about
half a second of CPU a check). Exit 0 when the worker replied; 1 otherwise, saying why."""

import os
import socket
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: worker_health.py NAME", file=sys.stderr)
        return 2
    name = f"{argv[1]}@{socket.gethostname()}"
    url = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL")
    if not url or url.startswith("filesystem://"):
        print("worker health: no broker URL (CELERY_BROKER_URL or REDIS_URL)", file=sys.stderr)
        return 1
    from celery import Celery

    try:
        replies = Celery(broker=url).control.ping(destination=[name], timeout=5.0)
    except Exception as exc:  # noqa: BLE001 - any failure is unhealthy; docker inspect says why
        print(f"worker health: {exc}", file=sys.stderr)
        return 1
    if not any(name in reply for reply in replies):
        print(f"worker health: {name} did not answer ({replies})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
