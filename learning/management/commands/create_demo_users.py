"""Create the demo accounts admin, reviewer and annotator (development only)."""

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

DEMO_USERS = {
    "admin": {"is_staff": True, "is_superuser": True},
    "reviewer": {"is_staff": False, "is_superuser": False},
    "annotator": {"is_staff": False, "is_superuser": False},
}


class Command(BaseCommand):
    help = (
        "Create or refresh the demo accounts admin, reviewer and annotator with the password "
        "in DEMO_PASSWORD (default 'fairmetric'). Refuses to run unless DEBUG is on, so "
        "production never gets them. Safe to re-run."
    )

    @transaction.atomic
    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("demo accounts are for development only (DEBUG is off)")
        password = os.environ.get("DEMO_PASSWORD") or "fairmetric"
        User = get_user_model()
        for username, flags in DEMO_USERS.items():
            user, created = User.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.org", **flags}
            )
            for field, value in flags.items():
                setattr(user, field, value)
            user.set_password(password)
            user.save()
            self.stdout.write(f"{'created' if created else 'updated'} demo user {username}")
