"""Benchmark: the metric's uncertainty in an audit at the Adult demo's size — the demo's
published metric (the EXPLORE fit on the paper's 25,000 pairs, gender directions projected
out) refitted ``AUDIT_METRIC_REFITS`` times on resamples of its answers by pair, and the audit of
a model's scores (30,162 records and their 60,324 sex and race twins) repeated under each.

    .venv/bin/python benchmarks/audit_uncertainty.py [--refits 20] [--quick]

A scratch SQLite database gets the demo (``load_adult_demo``'s code), the twins file as the API
writes it and a logistic regression's scores (with sex); then ``audit_create`` (the request)
and ``audit_run`` (the worker: the audit, stored, then its run under the refits). A second audit
of the same version shows the refits read from the cache. Printed: the seconds of each part, the
load average, and each figure's range across plausible metrics beside its range across items.
The task's limit: ``learning.audit_model``'s soft time limit (3,300 s). ``--quick``: 3 refits,
2,000 records (a test runs it; no timing claims).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run(refits: int, quick: bool) -> list[dict]:
    from benchmarks.counterfactual import _django

    os.environ["AUDIT_METRIC_REFITS"] = str(refits)
    _django(Path(tempfile.mkdtemp(prefix="fm-uncertainty-bench-")))
    import numpy as np
    import pandas as pd
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from experiments.adult import demo
    from experiments.twin_models import fit_logistic, space_labels
    from learning.audits import run as audit_run
    from learning.audits import services, twins
    from learning.exports.formats import stream_csv
    from spaces.models import Item

    if quick:  # a smaller table: the demo's code on its first 2,000 records
        from experiments.adult import data

        frame = data.adult_frame("train").iloc[:2000].reset_index(drop=True)
        data_frame = data.adult_frame
        data.adult_frame = lambda part: frame if part == "train" else data_frame(part)
        demo.adult_frame = data.adult_frame
    mark = time.perf_counter()
    loaded = demo.adult_demo_load()
    print(f"demo loaded in {time.perf_counter() - mark:.1f} s: version #{loaded.published.pk}")
    study, space = loaded.study, loaded.space
    user = get_user_model().objects.create_user("bench", is_staff=True)
    twins.sensitive_columns_set(user=user, study=study, columns=["sex", "race"])
    plan = twins.counterfactual_plan(study=study, columns="sex,race")
    text = "".join(stream_csv(twins.counterfactual_rows(study=study, plan=plan), plan.header))
    twin_frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    items = Item.objects.filter(space=space).order_by("row")
    records = pd.DataFrame(list(items.values_list("payload", flat=True)))
    keys = list(items.values_list("key", flat=True))
    model = fit_logistic(space, space_labels(space, "income", ">50K"))
    scores = np.concatenate([model.scores(records), model.scores(twin_frame)])
    body = pd.DataFrame(
        {
            "key": keys + list(twin_frame["key"]),
            "score": scores,
            "decision": np.where(scores >= 0.5, "yes", "no"),
        }
    ).to_csv(index=False)
    out = []
    for attempt in ("first audit (refits fitted)", "second audit (refits cached)"):
        load = os.getloadavg()[0]
        mark, cpu = time.perf_counter(), time.process_time()
        audit = services.audit_create(
            user=user, study=study, upload=SimpleUploadedFile("m.csv", body.encode()), name=attempt
        )
        assert audit_run.audit_run(audit_id=audit.pk) == "done"
        audit.refresh_from_db()
        out.append(
            {
                "audit": attempt,
                "records": len(keys),
                "twins": len(twin_frame),
                "audit_seconds": audit.seconds,
                "total_wall": time.perf_counter() - mark,
                "total_cpu": time.process_time() - cpu,
                "load": (load, os.getloadavg()[0]),
                "uncertainty": audit.uncertainty,
            }
        )
    return out


def _fmt(value, percent: bool) -> str:
    if value is None:
        return "—"
    return f"{100 * value:.1f} %" if percent else f"{value:.3f}"


def report(results: list[dict]) -> None:
    for r in results:
        u = r["uncertainty"]
        print(
            f"\n## {r['audit']}: {r['records']:,} records + {r['twins']:,} twins; load average "
            f"{r['load'][0]:.1f} → {r['load'][1]:.1f}\n\naudit stored after "
            f"{r['audit_seconds']:.1f} s; with its run under the refits "
            f"{r['total_wall']:.1f} s wall, {r['total_cpu']:.1f} s CPU (this process); "
            f"status {u.get('status')}: {u.get('fitted')} of {u.get('refits')} refits fitted "
            f"({u.get('basis')}; refitting {u.get('fit_seconds')} s when fitted)\n"
        )
        print("| figure | audit (across items) | across plausible metrics (2.5–97.5 %) | min–max |")
        print("|---|---|---|---|")
        for name, f in (u.get("figures") or {}).items():
            pct = name not in ("mean_gap", "worst_gap", "consistency")
            lo, hi = f["interval"]
            print(
                f"| {name} | {_fmt(f['audit'], pct)} ({_fmt(lo, pct)}–{_fmt(hi, pct)}) | "
                f"{_fmt(f['low'], pct)}–{_fmt(f['high'], pct)} | "
                f"{_fmt(f['min'], pct)}–{_fmt(f['max'], pct)} |"
            )
        print(
            f"\nverdict: {u.get('verdict')}; kept violations: "
            f"{ {k: v for k, v in (u.get('kept_violations') or {}).items() if k != 'worst'} }"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refits", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    report(run(3 if args.quick else args.refits, args.quick))


if __name__ == "__main__":
    main()
