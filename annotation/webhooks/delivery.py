"""Sending a webhook delivery: the address check, the signature, the POST, the retry schedule.

A delivery is claimed by one conditional UPDATE (pending, due; its ``next_attempt_at`` moved a
timeout ahead), so two workers — a redelivered task, the sweep — never send it at once. The body
is the delivery's JSON payload with its id; the signature is HMAC-SHA256 under the webhook's
secret over ``"<timestamp>.<body>"``, sent as ``X-Fairmetric-Signature: t=<timestamp>,v1=<hex>``
(docs/annotation.md says how a receiver checks it). Only http(s) URLs; the host is resolved once
and every address it resolves to must be public unless ``WEBHOOK_ALLOW_PRIVATE`` — the connection
then goes to that checked address (no second lookup, so DNS cannot rebind it), and redirects are
not followed. A 2xx answer delivers it; anything else is retried after
``WEBHOOK_RETRY_SECONDS × 2^(attempt − 1)`` (at most an hour) until ``WEBHOOK_MAX_ATTEMPTS``.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from annotation.events import delivery_send
from annotation.models import WebhookDelivery

Status = WebhookDelivery.Status
MAX_BACKOFF_SECONDS = 3600
KEPT_BODY = 1000
USER_AGENT = "fairmetric-webhooks/1"


class UnsafeUrl(ValueError):
    """A URL the app does not send to (scheme, host, or an internal address)."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str
    address: str  # the checked IP address the connection goes to


def url_check(url: str, *, allow_private: bool | None = None) -> Target:
    """The URL's target if the app may send to it, else :class:`UnsafeUrl` saying why."""
    allow = settings.WEBHOOK_ALLOW_PRIVATE if allow_private is None else allow_private
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeUrl("only http and https URLs receive webhooks")
    if not parts.hostname:
        raise UnsafeUrl("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeUrl("credentials in the URL are not allowed; use the signature")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeUrl("the URL's port is not a number from 1 to 65535") from None
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeUrl(f"the host {parts.hostname!r} does not resolve") from None
    addresses = sorted({info[4][0] for info in infos})
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if not allow and not ip.is_global:
            raise UnsafeUrl(
                f"{parts.hostname} resolves to {address}, an internal address; webhooks go to "
                "public addresses only (WEBHOOK_ALLOW_PRIVATE allows others)"
            )
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(parts.scheme, parts.hostname, port, path, addresses[0])


class _HTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _HTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(
            target.host, target.port, timeout=timeout, context=ssl.create_default_context()
        )
        self._address = target.address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Fairmetric-Signature`` value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def delivery_body(delivery: WebhookDelivery) -> bytes:
    document = {"id": str(delivery.delivery_id), **delivery.payload}
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def post(url: str, *, body: bytes, headers: dict) -> tuple[int, str]:
    """POST ``body`` to a checked ``url``; (status, the start of the answer's body)."""
    target = url_check(url)
    connection = (_HTTPS if target.scheme == "https" else _HTTP)(
        target, float(settings.WEBHOOK_TIMEOUT_SECONDS)
    )
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        answer = connection.getresponse()
        text = answer.read(KEPT_BODY).decode("utf-8", "replace")
        return answer.status, text
    finally:
        connection.close()


def backoff_seconds(attempt: int) -> int:
    """The wait after a failed ``attempt`` (1, 2, …)."""
    return min(MAX_BACKOFF_SECONDS, settings.WEBHOOK_RETRY_SECONDS * 2 ** max(0, attempt - 1))


def _claim(delivery_id: int) -> WebhookDelivery | None:
    now = timezone.now()
    lease = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS * 3)
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    claimed = (
        WebhookDelivery.objects.filter(due, pk=delivery_id, status=Status.PENDING)
        .filter(webhook__active=True)
        .update(next_attempt_at=lease)
    )
    if not claimed:
        return None
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)


def deliver(delivery_id: int) -> str:
    """One attempt at a due delivery: "delivered", "retry", "failed", or "skipped" (not due,
    already done, gone, or its webhook switched off)."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return "skipped"
    hook = delivery.webhook
    body = delivery_body(delivery)
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Fairmetric-Event": delivery.event,
        "X-Fairmetric-Delivery": str(delivery.delivery_id),
        "X-Fairmetric-Signature": signature(hook.secret, stamp, body),
    }
    attempt = delivery.attempts + 1
    code, text, error = None, "", ""
    try:
        code, text = post(hook.url, body=body, headers=headers)
    except UnsafeUrl as refused:
        error = str(refused)
    except (OSError, http.client.HTTPException) as failure:
        error = f"{type(failure).__name__}: {failure}"[:KEPT_BODY]
    ok = code is not None and 200 <= code < 300
    if ok:
        outcome, status, later = "delivered", Status.DELIVERED, None
    elif attempt >= settings.WEBHOOK_MAX_ATTEMPTS:
        outcome, status, later = "failed", Status.FAILED, None
    else:
        outcome, status, later = "retry", Status.PENDING, backoff_seconds(attempt)
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=status,
        attempts=attempt,
        response_status=code,
        response_body=text,
        error=error if not ok else "",
        delivered_at=now if ok else None,
        next_attempt_at=now + timedelta(seconds=later) if later is not None else None,
    )
    if later is not None:
        delivery_send(delivery.pk, countdown=later)
    return outcome


def deliveries_sweep(*, limit: int = 500) -> int:
    """Queue pending deliveries that are due (a lost task, a broker that was down, a worker
    killed mid-send); returns how many. Sending twice is harmless: each attempt claims."""
    now = timezone.now()
    due = WebhookDelivery.objects.filter(
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now),
        status=Status.PENDING,
        webhook__active=True,
        created_at__lte=now - timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS),
    ).values_list("pk", flat=True)[:limit]
    ids = list(due)
    for pk in ids:
        delivery_send(pk)
    return len(ids)
