"""Create the demo accounts admin, reviewer and annotator (development only)."""

from django.core.management.base import BaseCommand, CommandError

from accounts.demo_users import demo_users_create
from common.errors import NotAllowed


class Command(BaseCommand):
    help = (
        "Create or refresh the demo accounts admin, reviewer and annotator with the password "
        "in DEMO_PASSWORD (default 'fairmetric'). Refuses to run unless DEBUG is on, so "
        "production never gets them. Safe to re-run."
    )

    def handle(self, *args, **options):
        try:
            demo_users_create(log=self.stdout.write)
        except NotAllowed as error:
            raise CommandError(error.message) from None
