"""python manage.py reproduce_adult_table: the seed paper's Adult table under the authors' protocol."""

from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from common.errors import AppError
from experiments.adult.protocol import CHOICES, Protocol, app_source, run_table
from experiments.adult.sensr import TorchMissing, require_torch
from experiments.adult.table import (
    COLUMNS,
    ROWS,
    TABLE_ROWS,
    download,
    format_table,
    local_export,
)
from spaces.exceptions import InputFileError

BUDGET_DIVISOR = 100


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _divisor(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Reproduce the seed paper's Adult table (Baseline, SenSR with its own metric, SenSR + "
        "EXPLORE with and without gender; mean ± sd over runs beside the paper's figures) "
        "under the authors' protocol: each run draws a random 80/20 split of both files, "
        "learns EXPLORE's Sigma through the app (a record space, the pairs imported as "
        "feedback, the refit service, a published version downloaded through the export API "
        "with a token), the authors' sensitive directions, and trains their two-stage SenSR "
        "(all runs together; CUDA when present). --split, --directions, --sigma and --attack "
        "change one choice each (docs/adult.md). Default schedule: theirs divided by "
        f"{BUDGET_DIVISOR} (steps / {BUDGET_DIVISOR} at lr × {BUDGET_DIVISOR}), about 40 "
        "minutes on 2 shared cores; --divisor 1 is theirs (hours on a CPU). Needs PyTorch: "
        "make extras."
    )

    def add_arguments(self, parser):
        parser.add_argument("--quick", action="store_true", help="1 run, tiny data and steps")
        parser.add_argument("--runs", type=_positive, default=None, help="default 10")
        parser.add_argument("--first-seed", type=int, default=0, help="runs use seeds from it")
        for name, allowed in CHOICES.items():
            parser.add_argument(
                f"--{name}", choices=allowed, default=allowed[0], help=f"default {allowed[0]}"
            )
        parser.add_argument(
            "--divisor",
            type=_divisor,
            default=BUDGET_DIVISOR,
            help=f"the authors' schedule: steps / D at lr × D (default {BUDGET_DIVISOR}; 1 = theirs)",
        )
        parser.add_argument(
            "--rows",
            default=",".join(TABLE_ROWS),
            help=f"comma-separated among {', '.join(ROWS)} (default: {', '.join(TABLE_ROWS)}; "
            "explore-authors: SenSR with the authors' own EXPLORE estimator on the run's pairs, "
            "a control; project: the baseline on the data with the directions projected out)",
        )
        parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda")
        parser.add_argument("--url", default="", help="a running fairmetric (with --token)")
        parser.add_argument("--token", default="", help="an API token for --url")
        parser.add_argument("--study", type=_positive, default=None, help="study id for --url")
        parser.add_argument("--json", default="", help="also write the figures to this file")

    def handle(self, *args, **options):
        started = time.monotonic()
        remote = options["url"] or options["token"]
        if remote and not (options["url"] and options["token"] and options["study"]):
            raise CommandError("--url needs --token and --study")
        rows = tuple(r.strip() for r in options["rows"].split(",") if r.strip())
        try:
            protocol = Protocol(
                split="files" if remote else options["split"],
                directions=options["directions"],
                sigma=options["sigma"],
                attack=options["attack"],
                divisor=options["divisor"],
                rows=tuple(r for r in rows if not (remote and r == "explore-no-gender")),
                quick=options["quick"],
                device=options["device"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        runs = options["runs"] or (1 if options["quick"] else 10)
        seeds = list(range(options["first_seed"], options["first_seed"] + runs))
        try:
            require_torch()  # fail before any work when the extra is missing
        except TorchMissing as exc:
            raise CommandError(str(exc)) from None
        verbose = options["verbosity"] > 1

        def log(line: str) -> None:
            if verbose:  # with the time of day: the rows' steps are minutes apart on a CPU
                self.stdout.write(f"{time.strftime('%H:%M:%S')} {line}")

        if remote:

            def fetch(protocol, seed, train, genders):
                got = download(
                    base_url=options["url"], token=options["token"], study_id=options["study"]
                )
                return [got]

            self.stdout.write("--url: the files' split, that study's Sigma for every run")
        else:
            fetch = app_source(lambda studies: local_export(*studies), log)
        try:
            results, validity = run_table(protocol, seeds, fetch, log)
        except (RuntimeError, ValueError, InputFileError, AppError) as exc:
            raise CommandError(str(exc)) from None
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"\n{runs} run(s); Sigma downloaded through the export API; protocol "
            + ", ".join(f"{k}={v}" for k, v in protocol.as_dict().items() if k != "rows")
        )
        self.stdout.write(format_table(results, validity))
        base = results.get("baseline")
        for key, values in results.items():
            if key == "baseline" or base is None:
                continue
            mean, b = values.mean(axis=0), base.mean(axis=0)
            self.stdout.write(
                f"{ROWS[key]} vs the baseline: S-Con {mean[1]:.3f} vs {b[1]:.3f}, "
                f"GR-Con {mean[2]:.3f} vs {b[2]:.3f}, Gap_G RMS {mean[3]:.3f} vs {b[3]:.3f}, "
                f"Gap_R RMS {mean[5]:.3f} vs {b[5]:.3f}"
            )
        if options["json"]:
            figures = {
                "columns": COLUMNS,
                "runs": runs,
                "seeds": seeds,
                "protocol": protocol.as_dict(),
                "schedules": {r: protocol.schedule(r).as_dict() for r in protocol.rows},
                "seconds": round(elapsed, 1),
                "rows": {key: values.tolist() for key, values in results.items()},
                "validity": validity,
            }
            with open(options["json"], "w", encoding="utf-8") as f:
                json.dump(figures, f, indent=1)
        self.stdout.write(f"done in {elapsed:.0f}s")
