"""The demo accounts admin, reviewer and annotator (development only: DEBUG must be on)."""

from __future__ import annotations

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from common.errors import NotAllowed

DEMO_USERS = {
    "admin": {"is_staff": True, "is_superuser": True},
    "reviewer": {"is_staff": False, "is_superuser": False},
    "annotator": {"is_staff": False, "is_superuser": False},
}


@transaction.atomic
def demo_users_create(*, log=lambda line: None) -> dict:
    """Create or refresh the demo accounts with the password in ``DEMO_PASSWORD`` (default
    'fairmetric'); ``{username: user}``. Refused unless DEBUG is on."""
    if not settings.DEBUG:
        raise NotAllowed("demo accounts are for development only (DEBUG is off)")
    password = os.environ.get("DEMO_PASSWORD") or "fairmetric"
    User = get_user_model()
    users = {}
    for username, flags in DEMO_USERS.items():
        user, created = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.org", **flags}
        )
        for field, value in flags.items():
            setattr(user, field, value)
        user.set_password(password)
        user.save()
        users[username] = user
        log(f"{'created' if created else 'updated'} demo user {username}")
    return users


def demo_users_existing() -> dict:
    """The demo accounts that exist (``{username: user}``), for demos loaded after them."""
    found = get_user_model().objects.filter(username__in=list(DEMO_USERS))
    by_name = {user.username: user for user in found}
    return {name: by_name[name] for name in DEMO_USERS if name in by_name}
