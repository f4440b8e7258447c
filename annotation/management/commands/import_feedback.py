"""python manage.py import_feedback PATH --study STUDY [--kind pairs|groups] [--format csv|jsonl]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.setup.feedback_import import feedback_import
from spaces.exceptions import InputFileError


class Command(BaseCommand):
    help = (
        "Import existing feedback into a study as imported (not annotated) data: pair "
        "judgments (CSV header key_a,key_b,label or JSON lines with those fields) or comparable "
        "groups (CSV header group,key, one row per member, or JSON lines {name, keys}). Keys "
        "are item keys of the study's space. Validated completely first (errors name the line); "
        "on any error nothing is stored. A refit of the study is queued afterwards."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the CSV or JSON-lines file")
        parser.add_argument("--study", required=True, help="the study's name or id")
        parser.add_argument("--kind", choices=["auto", "pairs", "groups"], default="auto")
        parser.add_argument(
            "--format",
            dest="fmt",
            choices=["auto", "csv", "jsonl"],
            default="auto",
            help="default: from the file's extension",
        )
        parser.add_argument(
            "--provenance",
            default="",
            help="where the feedback comes from (default: the file name)",
        )

    def handle(self, *args, **options):
        ref = options["study"]
        study = Study.objects.select_related("space").filter(name=ref).first()
        if study is None and ref.isdigit():
            study = Study.objects.select_related("space").filter(pk=int(ref)).first()
        if study is None:
            raise CommandError(f"no study named {ref!r}")
        try:
            summary = feedback_import(
                study=study,
                path=options["path"],
                kind=options["kind"],
                fmt=options["fmt"],
                provenance=options["provenance"],
            )
        except InputFileError as exc:
            raise CommandError(f"{options['path']}: {exc} (nothing was stored)") from None
        if summary.judgments:
            what = f"{summary.judgments} pair judgments"
        else:
            what = f"{summary.groups} groups with {summary.members} members"
        self.stdout.write(
            f"Imported {what} into study {study.name!r} (provenance: {summary.provenance}); "
            "a refit is queued."
        )
