"""Benchmark: a 1,000,000-record audit upload — the request's time and memory growth, and the
worker's (issue 39: 79 s and +5 GB in the web process, a 1.4 GB stored input, 85 s of worker).

    .venv/bin/python benchmarks/audit_upload.py [--quick] [--rows 1000000] [--worker-rows N]

A scratch SQLite database gets a record space of 2,000 records (one numeric field and eight
categorical ones of five values each: φ has 41 dimensions, as Adult's 43), a study and a
published metric. Each case runs in a fresh process, its memory growth measured from the kernel:
the peak resident memory (VmHWM, reset through ``/proc/self/clear_refs`` once the process is
ready) less the resident memory then.

1. **web, new records** — a Parquet of ``--rows`` new records whose every feature-map field is
   constant (unique keys, random scores), POSTed to ``/api/studies/{id}/audits/`` through
   Django's test client (middleware, DRF's multipart parser, the service), at the default bounds.
2. **web, one key** — a Parquet of one pool key repeated ``--rows`` times, the same way.
3. **worker** — a CSV of ``--worker-rows`` such new records (a CSV's rows are only counted by the
   worker; default: the most the default ``AUDIT_MAX_DECODED_MB`` admits, the worst accepted
   audit of its kind: identical points, random scores, so every neighbour pair is a violation),
   ``--raise-bound`` to let more through: the worker's run (``learning.audits.run.audit_run``:
   read and check every row a chunk at a time, search, figures, store), its seconds and memory
   growth.

Printed: status, seconds, memory growth (MB), the stored input's size. ``--quick`` runs 5,000
rows (a test runs it; no claims).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIELDS = 8
VALUES = 5


def _django(scratch: Path, **env: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
            "DATABASE_URL": f"sqlite:///{scratch / 'bench.sqlite3'}",
            "MEDIA_ROOT": str(scratch / "media"),
            "VAR_DIR": str(scratch / "var"),
            "LOG_LEVEL": "ERROR",
            "AUDIT_THREADS": "1",
            **env,
        }
    )
    import django

    django.setup()


def _rss_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> float:
    """Reset the kernel's peak resident memory to the current one; the current one (MB)."""
    Path("/proc/self/clear_refs").write_text("5")
    return _rss_mb("VmRSS:")


def _records(rows: int, seed: int = 0):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"key": [f"r{i}" for i in range(rows)], "age": rng.integers(18, 90, rows)})
    for f in range(FIELDS):
        frame[f"f{f}"] = rng.choice([f"v{v}" for v in range(VALUES)], size=rows)
    return frame


def setup(scratch: Path, rows: int, worker_rows: int, k: int) -> dict:
    """The database, space, study, published metric and reviewer; the three files."""
    _django(scratch)
    import numpy as np
    import pandas as pd
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.models import Membership, Study
    from learning.versions import storage
    from spaces.records.create import record_space_create

    call_command("migrate", verbosity=0)
    frame = _records(2000)
    space = record_space_create(
        name="bench",
        frame=frame,
        numeric=["age"],
        categorical=[f"f{f}" for f in range(FIELDS)],
        key_column="key",
    )
    study = Study.objects.create(name="bench", space=space)
    version = storage.metric_version_create(
        study=study, method="explore", sigma=np.eye(space.dimension), label="I", counts={}
    )
    storage.version_publish(  # a hand-made metric, never judged: published with the reason
        version_id=version.pk, user=None, reason="a benchmark's hand-made metric", by="benchmark"
    )
    user = get_user_model().objects.create_user("reviewer")
    Membership.objects.create(user=user, study=study, role=Membership.Role.REVIEWER)
    rng = np.random.default_rng(1)

    def constant(n: int) -> pd.DataFrame:
        table = pd.DataFrame({"key": [f"new{i:07d}" for i in range(n)], "score": rng.random(n)})
        table["age"] = 40
        for f in range(FIELDS):
            table[f"f{f}"] = "v0"
        return table

    constant(rows).to_parquet(scratch / "new.parquet", index=False)
    pd.DataFrame({"key": ["r0"] * rows, "score": 0.5}).to_parquet(
        scratch / "one_key.parquet", index=False
    )
    if not worker_rows:  # the most the default bound admits at this k
        from django.conf import settings

        from learning.audits.inputs import decoded_bytes

        worker_rows = settings.AUDIT_MAX_DECODED_MB * 2**20 // decoded_bytes(1, space.dimension, k)
    constant(worker_rows).to_csv(scratch / "new.csv", index=False)
    return {
        "study": study.pk,
        "user": user.pk,
        "dimension": space.dimension,
        "worker_rows": worker_rows,
    }


def web(scratch: Path, file: str, k: int, study: int, user: int) -> dict:
    """POST the file to the API in this fresh process; status, seconds, memory growth."""
    _django(scratch)
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    client = Client(HTTP_HOST="localhost")
    client.force_login(get_user_model().objects.get(pk=user))
    path = scratch / file
    upload = SimpleUploadedFile(path.name, path.read_bytes())
    body = encode_multipart(BOUNDARY, {"predictions": upload, "k": str(k)})
    url = f"/api/studies/{study}/audits/"
    client.get(url)  # the first request's imports and caches, before the measure
    before = _reset_peak()
    began = time.perf_counter()
    response = client.generic("POST", url, body, content_type=MULTIPART_CONTENT)
    seconds = time.perf_counter() - began
    grew = _rss_mb("VmHWM:") - before
    answer = response.json()
    return {
        "file": f"{path.name} ({path.stat().st_size / 2**20:.1f} MB)",
        "status": response.status_code,
        "answer": answer.get("detail") or {"id": answer.get("id"), "status": answer.get("status")},
        "seconds": round(seconds, 2),
        "web_memory_growth_mb": round(grew, 1),
    }


def worker(scratch: Path, bound: str, k: int, study: int, user: int) -> dict:
    """The CSV accepted (``bound``: AUDIT_MAX_DECODED_MB, "" the default), then the worker's run
    in this fresh process."""
    _django(scratch, **({"AUDIT_MAX_DECODED_MB": bound} if bound else {}))
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.models import Study
    from learning.audits import run, services
    from learning.models import ModelAudit

    path = scratch / "new.csv"
    audit = services.audit_create(
        user=get_user_model().objects.get(pk=user),
        study=Study.objects.get(pk=study),
        upload=SimpleUploadedFile(path.name, path.read_bytes()),
        k=k,
    )
    stored = Path(audit.predictions.path).stat().st_size
    before = _reset_peak()
    began, cpu = time.perf_counter(), time.process_time()
    outcome = run.audit_run(audit_id=audit.pk)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    grew = _rss_mb("VmHWM:") - before
    audit = ModelAudit.objects.get(pk=audit.pk)
    return {
        "file": f"{path.name} ({path.stat().st_size / 2**20:.1f} MB)",
        "outcome": outcome,
        "error": audit.error[:200],
        "items": audit.item_count,
        "violating_pairs": audit.violation_count,
        "stored_input_mb": round(stored / 2**20, 1),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "worker_memory_growth_mb": round(grew, 1),
        "parts": (audit.summary or {}).get("seconds"),
    }


def _child(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 rows (a test runs it)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--worker-rows", type=int, help="default: the most the bound admits")
    parser.add_argument("--k", type=int, default=10, help="neighbours of every audit")
    parser.add_argument("--raise-bound", action="store_true", help="AUDIT_MAX_DECODED_MB=100000")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, scratch, *rest = args.child
        ids = [int(v) for v in rest[-2:]]
        run = web if kind == "web" else worker
        result = run(Path(scratch), rest[0], int(rest[1]), *ids)
        print(json.dumps(result))
        return 0
    if args.quick:
        args.rows = args.worker_rows = 5_000

    scratch = Path(tempfile.mkdtemp(prefix="fm-audit-upload-"))
    began = time.perf_counter()
    world = _child_setup(scratch, args.rows, args.worker_rows or 0, args.k)
    print(
        f"set up in {time.perf_counter() - began:.0f} s: φ of {world['dimension']} dimensions; "
        f"k = {args.k}"
    )
    ids = [str(args.k), str(world["study"]), str(world["user"])]
    bound = args.raise_bound
    load = os.getloadavg()[0]
    rows = [
        ("web, new records (Parquet)", _child("web", str(scratch), "new.parquet", *ids)),
        ("web, one key repeated (Parquet)", _child("web", str(scratch), "one_key.parquet", *ids)),
        (
            f"worker, {world['worker_rows']:,} new records (CSV{', bound raised' * bound})",
            _child("worker", str(scratch), "100000" if bound else "", *ids),
        ),
    ]
    print(f"load average {load:.1f} → {os.getloadavg()[0]:.1f}")
    for name, result in rows:
        print(f"{name}: {json.dumps(result, ensure_ascii=False)}")
    return 0


def _child_setup(scratch: Path, rows: int, worker_rows: int, k: int) -> dict:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from benchmarks.audit_upload import setup; from pathlib import Path; "
        "print(json.dumps(setup(Path(sys.argv[2]), *map(int, sys.argv[3:6]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(scratch), str(rows), str(worker_rows), str(k)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())
