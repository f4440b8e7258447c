"""A real HTTP server on loopback that receives webhook deliveries: it records each request and
answers with the next status of a script (then 200), so tests see signatures and retries."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, statuses: list[int] | None = None):
        self.statuses = list(statuses or [])
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver._lock:
                    receiver.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(f"answered {status}".encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def events(self) -> list[str]:
        return [r["headers"]["X-Fairmetric-Event"] for r in self.requests]


def verified(request: dict, secret: str) -> dict:
    """The delivery's JSON document if its signature checks out under ``secret`` (the way
    docs/annotation.md tells a receiver to check it), else AssertionError."""
    parts = dict(p.split("=", 1) for p in request["headers"]["X-Fairmetric-Signature"].split(","))
    expected = hmac.new(
        secret.encode(), parts["t"].encode() + b"." + request["body"], hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(expected, parts["v1"]), "bad signature"
    return json.loads(request["body"])
