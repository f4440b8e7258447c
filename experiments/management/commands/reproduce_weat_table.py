"""python manage.py reproduce_weat_table [--json PATH]: the seed paper's WEAT table."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from experiments import glove_demo
from experiments.weat_table import (
    K_VALUES,
    ReproductionError,
    reproduction_run,
    table_rows,
    table_text,
)
from learning.evaluation.weat import N_PERMUTATIONS


def _ks(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--k must be comma-separated integers, got {text!r}") from None
    if not values:
        raise CommandError("--k needs at least one value")
    return values


class Command(BaseCommand):
    help = (
        "Reproduce the seed paper's WEAT table on the demo data (run load_demo first): fit FACE "
        "with k = 3, 10, 20 on the study's comparable groups (the ~1,200 names) and EXPLORE on "
        "its imported judgments (the paper's 50,000 comparable name pairs and 50,000 "
        "incomparable positive/negative word pairs), then run the 10 WEATs under the Euclidean "
        "metric and each learned metric (50,000 permutations, or all re-partitions when fewer) "
        "and print the table: rows = tests, per metric p and d, * marks p < 0.05. Results are "
        "stored for the dashboards: MetricVersion rows (labels face-<k>, explore; parameters "
        "source=reproduce_weat_table) with their WeatResult rows, and the cached Euclidean rows. "
        "Re-running replaces this command's earlier unpublished versions of the study (and "
        "their results) instead of adding more; a published one is kept."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", dest="json_path", help="also write the table as JSON rows")
        parser.add_argument(
            "--study",
            default=glove_demo.STUDY_NAME,
            help=f"the study (default: {glove_demo.STUDY_NAME!r})",
        )
        parser.add_argument("--suite", help="the WEAT suite (default: the study's first)")
        parser.add_argument(
            "--k",
            default=",".join(map(str, K_VALUES)),
            help="FACE's numbers of factors, comma-separated (default 3,10,20)",
        )
        parser.add_argument(
            "--permutations",
            type=int,
            default=N_PERMUTATIONS,
            help="sampled re-partitions per test when not exact (default 50000)",
        )

    def handle(self, *args, **options):
        study = Study.objects.select_related("space").filter(name=options["study"]).first()
        if study is None:
            hint = (
                " (run `python manage.py load_demo` first)"
                if (options["study"] == glove_demo.STUDY_NAME)
                else ""
            )
            raise CommandError(f"no study named {options['study']!r}{hint}")
        suites = study.weat_suites.order_by("id")
        suite = suites.filter(name=options["suite"]).first() if options["suite"] else suites.first()
        if suite is None:
            raise CommandError(
                f"study {study.name!r} has no WEAT suite {options['suite']!r}"
                if options["suite"]
                else f"study {study.name!r} has no WEAT suite attached"
            )
        if options["permutations"] < 1:
            raise CommandError("--permutations must be at least 1")
        try:
            result = reproduction_run(
                study=study,
                suite=suite,
                ks=_ks(options["k"]),
                n_permutations=options["permutations"],
                log=self.stderr.write,
            )
        except ReproductionError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"WEAT on {study.space.name}: study {study.name!r}, suite {suite.name!r}")
        self.stdout.write(table_text(result))
        self.stdout.write(
            f"Stored versions {', '.join(f'{v.label} #{v.pk}' for v in result.versions)}; "
            f"fits {result.seconds['fit']:.1f}s, WEATs {result.seconds['weat']:.1f}s."
        )
        if options["json_path"]:
            path = Path(options["json_path"])
            path.write_text(json.dumps(table_rows(result), indent=1) + "\n", encoding="utf-8")
            self.stdout.write(f"Wrote {path}")
