"""Typed readers of environment variables for the settings: each raises
``ImproperlyConfigured`` with one readable line when the value is bad, so a misconfigured
process stops at start-up."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def env_path(name: str, default: Path) -> Path:
    raw = env_str(name)
    if not raw:
        return default
    path = Path(raw)
    if not path.is_absolute():
        raise ImproperlyConfigured(f"{name} must be an absolute path, got {raw!r}")
    return path


def env_url(name: str, schemes: set[str]) -> str:
    """A URL whose scheme is one of ``schemes`` (or empty when unset)."""
    raw = env_str(name)
    if not raw:
        return ""
    scheme = urlparse(raw).scheme
    if scheme not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise ImproperlyConfigured(f"{name} must be a URL with scheme {allowed}; got {raw!r}")
    return raw
