"""python manage.py reproduce_adult_table: the seed paper's Adult table with the app's Sigma."""

from __future__ import annotations

import json
import time
from dataclasses import replace

from django.core.management.base import BaseCommand, CommandError

from common.errors import AppError
from experiments.adult.demo import adult_demo_load
from experiments.adult.sensr import TorchMissing, TrainSettings, require_torch
from experiments.adult.table import (
    COLUMNS,
    OURS,
    download,
    format_table,
    local_export,
    run_experiment,
)
from spaces.exceptions import InputFileError

QUICK = {"steps": 150, "auditor_nsteps": 10}


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Reproduce the seed paper's Adult table: download the published EXPLORE Sigma and the "
        "feature map through the export API with a token (by default from this app, served "
        "in-process on a free local port, after load_adult_demo), train the baseline network "
        "and SenSR (inFairness) with that Sigma over several restarts, print B-Acc, S-Con, "
        "GR-Con and the gender/race gaps (mean ± sd) beside the paper's. Needs PyTorch: "
        "make extras."
    )

    def add_arguments(self, parser):
        parser.add_argument("--quick", action="store_true", help="1 restart, 150 steps (tests)")
        parser.add_argument("--restarts", type=_positive, default=None, help="default 5")
        parser.add_argument("--steps", type=_positive, default=None, help="training steps")
        parser.add_argument("--url", default="", help="a running fairmetric (with --token)")
        parser.add_argument("--token", default="", help="an API token for --url")
        parser.add_argument("--study", type=_positive, default=None, help="study id for --url")
        parser.add_argument("--json", default="", help="also write the figures to this file")

    def handle(self, *args, **options):
        started = time.monotonic()
        settings = TrainSettings(**(QUICK if options["quick"] else {}))
        if options["steps"]:
            settings = replace(settings, steps=options["steps"])
        restarts = options["restarts"] or (1 if options["quick"] else 5)
        if (options["url"] or options["token"]) and not (
            options["url"] and options["token"] and options["study"]
        ):  # the arguments first: a wrong call is told so whether or not PyTorch is there
            raise CommandError("--url needs --token and --study")
        try:
            require_torch()  # fail before any work when the extra is missing
        except TorchMissing as exc:
            raise CommandError(str(exc)) from None
        try:
            got = self._download(options)
            self.stdout.write(
                f"downloaded EXPLORE version #{got.metadata['id']} ({got.metadata['label']}) of "
                f"study #{got.metadata['study']['id']} and its {len(got.feature_map['feature_names'])}"
                f"-feature map through the export API in {time.monotonic() - started:.1f}s"
            )
            results = run_experiment(
                got.sigma,
                got.feature_map,
                restarts=restarts,
                settings=settings,
                log=self.stdout.write if options["verbosity"] > 1 else lambda _: None,
            )
        except (RuntimeError, ValueError, InputFileError, AppError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"\n{restarts} restart(s), {settings.steps} steps each; UCI Adult test file"
        )
        self.stdout.write(format_table(results))
        base, fair = results["baseline"].mean(axis=0), results["sensr"].mean(axis=0)
        for j, name in ((1, "S-Con"), (2, "GR-Con")):
            verdict = "more" if fair[j] > base[j] else "NOT more"
            self.stdout.write(
                f"SenSR with the app's Sigma is {verdict} consistent ({name}) than the baseline: "
                f"{fair[j]:.3f} vs {base[j]:.3f}"
            )
        if options["json"]:
            figures = {
                "columns": COLUMNS,
                "restarts": restarts,
                "settings": settings.as_dict(),
                "version": got.metadata["id"],
                "rows": {OURS[k]: v.tolist() for k, v in results.items()},
            }
            with open(options["json"], "w", encoding="utf-8") as f:
                json.dump(figures, f, indent=1)
        self.stdout.write(f"done in {time.monotonic() - started:.0f}s")

    def _download(self, options):
        if options["url"]:
            return download(
                base_url=options["url"], token=options["token"], study_id=options["study"]
            )
        demo = adult_demo_load(log=lambda _: None)
        with local_export(demo.study) as (base_url, token):
            return download(base_url=base_url, token=token, study_id=demo.study.pk)
