"""The image's HEALTHCHECK: GET /healthz from this container's gunicorn, as the TLS proxy asks
it (``X-Forwarded-Proto: https``, so that production's HTTPS redirect does not answer instead;
the first of ``ALLOWED_HOSTS`` as the host). Exit 0 when it answers 200 (ok or degraded)."""

import os
import sys
import urllib.request


def main() -> int:
    bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")
    host, _, port = bind.rpartition(":")
    if host in ("", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    names = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    name = names[0].lstrip(".*") if names else ""
    request = urllib.request.Request(
        f"http://{host}:{port}/healthz",
        headers={"X-Forwarded-Proto": "https", "Host": name or "localhost"},
    )
    try:
        with urllib.request.urlopen(request, timeout=4) as response:
            return 0 if response.status == 200 else 1
    except Exception as exc:  # noqa: BLE001 - any failure is unhealthy; docker inspect says why
        print(f"healthz: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
