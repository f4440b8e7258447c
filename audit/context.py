"""The request being served (actor and client IP), for audit events written deep in services."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestInfo:
    user: object | None
    ip: str | None


_current: ContextVar[RequestInfo | None] = ContextVar("audit_request", default=None)


def current() -> RequestInfo | None:
    return _current.get()


def client_ip(request) -> str | None:
    """REMOTE_ADDR: the proxy in front of gunicorn must set it (forwarded headers are spoofable)."""
    return request.META.get("REMOTE_ADDR") or None


class AuditContextMiddleware:
    """Remembers the request's user and IP while the view runs (after authentication)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _current.set(
            RequestInfo(user=getattr(request, "user", None), ip=client_ip(request))
        )
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)
