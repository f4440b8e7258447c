"""A record upload of 10⁶ rows: how long the web requests take, and the worker's time and memory.

    .venv/bin/python benchmarks/record_import.py             # 1,000,000 rows, CSV then Parquet
    .venv/bin/python benchmarks/record_import.py --quick     # 20,000 rows (seconds)
    .venv/bin/python benchmarks/record_import.py --formats csv --rows 200000

The table is the issue's: ``id,age,sex,hours,income`` (a 10⁶-row CSV is 25 MB), written as
CSV and as Parquet. For each format it times, through Django's test client as a staff user,
the upload POST, the columns page (GET) and the columns POST (which queues the import), then
runs the worker's body (``spaces.records.importing.record_import_run``) in a fresh Python
process — as a Celery worker would — and prints that process's wall time per stage and its
peak resident memory (``VmHWM``, reset once Django, pandas, pyarrow and scikit-learn are
loaded) above what it used then.

By default it builds a throwaway SQLite database and media folder in a temporary directory
(deleted at the end). With DATABASE_URL set it uses that database instead: point it at an
empty, throwaway PostgreSQL database (``createdb fm_bench``): it migrates it and leaves its
rows there.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def configure(workdir: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir / 'bench.sqlite3'}")
    os.environ.setdefault("MEDIA_ROOT", str(workdir / "media"))
    os.environ.setdefault("VAR_DIR", str(workdir / "var"))
    os.environ["DEBUG"] = "0"  # no query log, as in production
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    os.environ["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ["SESSION_COOKIE_SECURE"] = "0"
    os.environ["CSRF_COOKIE_SECURE"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    warnings.filterwarnings("ignore", message="No directory at")
    import django

    django.setup()
    from django.conf import settings

    # Pages render without collectstatic's manifest (DEBUG is off for production's timings).
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    settings.STORAGES = {**settings.STORAGES, "staticfiles": plain}


def memory_mb(field: str) -> float:
    """``VmRSS`` (resident now) or ``VmHWM`` (its peak) of this process, in MB (Linux). Unlike
    ``ru_maxrss``, the peak is this program's own: it does not inherit the parent's across exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_reset() -> bool:
    """Reset the peak (``VmHWM``) to the present size: Linux ≥ 4.0, ``/proc/self/clear_refs``."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def table_bytes(rows: int, fmt: str) -> bytes:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(1, rows + 1)],
            "age": rng.integers(17, 90, rows),
            "sex": rng.choice(["Male", "Female"], rows),
            "hours": rng.integers(1, 99, rows),
            "income": rng.choice(["<=50K", ">50K"], rows),
        }
    )
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer)
        return buffer.getvalue()
    return frame.to_csv(index=False).encode()


def timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def requests(rows: int, fmt: str) -> dict:
    """The web side: upload, columns page, columns POST (the import queued, not run)."""
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from spaces.models import EmbeddingImport
    from spaces.records import uploads

    queued = []
    uploads.record_import_enqueue = queued.append  # the benchmark runs the worker's body itself
    User = get_user_model()
    staff = User.objects.filter(username="bench-staff").first() or User.objects.create_user(
        "bench-staff", is_staff=True
    )
    client = Client()
    client.force_login(staff)
    content = table_bytes(rows, fmt)
    name = f"bench {fmt} {rows} {secrets.token_hex(3)}"
    upload = SimpleUploadedFile(f"people.{fmt}", content)
    response, upload_s = timed(
        lambda: client.post("/spaces/records/upload/", {"file": upload, "name": name})
    )
    assert response.status_code == 302, response.content[:500]
    url = response["Location"]
    page, page_s = timed(lambda: client.get(url))
    assert page.status_code == 200
    answer = {
        "col_0": "excluded",
        "col_1": "numeric",
        "col_2": "categorical",
        "col_3": "numeric",
        "col_4": "excluded:hidden",
        "label_column": "income",
        "key_column": "id",
    }
    from django.db import transaction

    def choose():
        with transaction.atomic():  # on_commit callbacks run when this block commits
            return client.post(url, answer)

    done, post_s = timed(choose)
    assert done.status_code == 302, done.content[:500]
    job = EmbeddingImport.objects.get(name=name)
    assert queued == [job.pk], queued
    return {
        "format": fmt,
        "rows": rows,
        "file_mb": round(len(content) / 2**20, 1),
        "upload_post_s": round(upload_s, 3),
        "columns_get_s": round(page_s, 3),
        "columns_post_s": round(post_s, 3),
        "import_id": job.pk,
    }


def run_import(import_id: int) -> dict:
    """The worker's side, in this (fresh) process: record_import_run and its memory."""
    from spaces.models import EmbeddingImport, EmbeddingSpace
    from spaces.records import importing
    from spaces.uploads import ProgressWriter

    stages: dict[str, float] = {}
    original = ProgressWriter.__call__

    def timing(self, stage, done, total):
        stages.setdefault(stage, time.perf_counter())
        return original(self, stage, done, total)

    ProgressWriter.__call__ = timing
    baseline = memory_mb("VmRSS")
    reset = peak_reset()
    result, wall = timed(lambda: importing.record_import_run(import_id=import_id))
    peak = memory_mb("VmHWM")
    job = EmbeddingImport.objects.get(pk=import_id)
    assert result == "done", (result, job.error)
    space = EmbeddingSpace.objects.get(pk=job.space_id)
    marks = sorted(stages.items(), key=lambda kv: kv[1]) + [("end", time.perf_counter())]
    per_stage = {a: round(tb - ta, 2) for (a, ta), (_, tb) in zip(marks, marks[1:], strict=False)}
    return {
        "import_s": round(wall, 2),
        "stages_s": per_stage,
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_above_baseline_mb": round(peak - baseline, 1),
        "peak_measured_from_baseline": reset,
        "items": space.item_count,
        "dimension": space.dimension,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 rows")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--formats", default="csv,parquet")
    parser.add_argument("--run-import", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="fm-record-bench-"))
    try:
        configure(workdir)
        if args.run_import:  # the child: the worker's body, alone in its process
            import pandas  # noqa: F401 - loaded before the baseline, as in a worker
            import pyarrow.parquet  # noqa: F401
            import sklearn.preprocessing  # noqa: F401

            print(json.dumps(run_import(args.run_import)))
            return
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        rows = args.rows or (20_000 if args.quick else 1_000_000)
        env = {**os.environ}
        requests(10, "csv")  # warm up: the first request of a process loads the modules
        for fmt in args.formats.split(","):
            figures = requests(rows, fmt)
            child = subprocess.run(
                [sys.executable, __file__, "--run-import", str(figures["import_id"])],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if child.returncode:
                raise SystemExit(child.stderr[-3000:])
            figures |= json.loads(child.stdout.strip().splitlines()[-1])
            figures.pop("import_id")
            print(json.dumps(figures))
            sys.stdout.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
