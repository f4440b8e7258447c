"""User-level access: staff. Study-level rules (roles) are ``annotation.access``."""

from __future__ import annotations

from .errors import NotAllowed


def is_staff(user) -> bool:
    """Logged-in, active staff or superusers: admins of every study and of the embedding spaces."""
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and (user.is_staff or user.is_superuser)
    )


def require_staff(user, message: str = "Only admins may do this.") -> None:
    if not is_staff(user):
        raise NotAllowed(message)
