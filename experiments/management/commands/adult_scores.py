"""python manage.py adult_scores [--out DIR]: score files of two income models for the Adult demo."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from experiments.adult.demo import SPACE_NAME
from experiments.adult.scores import adult_score_files
from spaces.models import EmbeddingSpace


class Command(BaseCommand):
    help = (
        "Write score files (key,score,decision) of two logistic regressions predicting income on "
        "the Adult demo's records - one that uses sex, one without it - to audit them on the "
        "study's Audits page or with POST /api/studies/<id>/audits/ (docs/audit.md). Needs the "
        "Adult demo (manage.py load_adult_demo)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--out", default="var/adult-scores", help="folder (default %(default)s)"
        )

    def handle(self, *args, **options):
        space = EmbeddingSpace.objects.filter(name=SPACE_NAME).first()
        if space is None or not space.feature_map:
            raise CommandError("the Adult demo is not loaded: run manage.py load_adult_demo first")
        try:
            written = adult_score_files(space=space, folder=Path(options["out"]))
        except OSError as exc:
            raise CommandError(f"could not write the score files: {exc}") from None
        for f in written:
            self.stdout.write(
                f"{f.name}: {f.rows:,} scores ({f.uses}; training accuracy {f.accuracy:.3f}) "
                f"-> {f.path}"
            )
