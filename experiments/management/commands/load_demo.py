"""python manage.py load_demo: demo accounts, GloVe space, names study, seed feedback, WEATs."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.demo_users import demo_users_create
from experiments.glove_demo import demo_load


class Command(BaseCommand):
    help = (
        "Load the demo (idempotent: a second run changes nothing): the demo accounts "
        "(create_demo_users, only when DEBUG is on), the space 'GloVe 6B 50d (demo)' (50,000 "
        "most frequent words plus the demo's words), ~1,200 popular US baby names tagged "
        "'name', the study 'Names should be treated alike' with one group of all names and the "
        "seed paper's 100,000 EXPLORE pairs as imported judgments, and the 10 Caliskan WEATs."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-users",
            action="store_true",
            help="do not create the demo accounts or their memberships",
        )

    def handle(self, *args, **options):
        started = time.monotonic()
        users = {}
        if options["no_users"]:
            pass
        elif not settings.DEBUG:
            self.stdout.write("DEBUG is off: no demo accounts (create_demo_users is dev-only)")
        else:
            users = demo_users_create(log=self.stdout.write)
        try:
            summary = demo_load(users=users, log=self.stdout.write)
        except (RuntimeError, ValueError) as exc:
            raise CommandError(f"could not load the demo: {exc}") from None
        for line in summary.created:
            self.stdout.write(f"created {line}")
        if not summary.created:
            self.stdout.write("the demo was complete already; nothing changed")
        self.stdout.write(
            f"Demo ready in {time.monotonic() - started:.1f}s: study {summary.study.name!r} on "
            f"space {summary.space.name!r} ({summary.space.item_count:,} items)."
        )
