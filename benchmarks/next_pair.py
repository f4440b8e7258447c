"""Next-pair latency with many judgments stored: prints p50 / p95 / p99 in milliseconds.

    .venv/bin/python benchmarks/next_pair.py            # 1,000,000 judgments (a few minutes)
    .venv/bin/python benchmarks/next_pair.py --quick    # 20,000 judgments (seconds)

By default it builds a throwaway SQLite database in a temporary directory (deleted at the
end). With DATABASE_URL set it uses that database instead: point it at an empty, throwaway
PostgreSQL database (`createdb fm_bench`), since it migrates it and leaves its rows there.

It creates one embedding space (``--items`` x 50, random), ``--annotators`` users, and bulk-
inserts the judgments (random pairs, one answer per annotator and pair), 5% of them by one
prolific annotator whose next pair is then timed: through the sampler alone and through
the HTTP API (session-authenticated GET /api/studies/{id}/next-pair/), for the overlap path
(overlap 2, the common case) and for each strategy (overlap 1, so the strategy decides).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def configure(workdir: Path) -> str:
    sys.path.insert(0, str(ROOT))
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    os.environ["VAR_DIR"] = str(workdir / "var")
    os.environ["DEBUG"] = "0"  # no query log, as in production
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    os.environ["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ["SESSION_COOKIE_SECURE"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic here
    import django

    django.setup()
    return os.environ["DATABASE_URL"]


def build(args, rng):
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation.models import Membership, PairJudgment, Study
    from learning.models import MetricVersion
    from spaces.models import EmbeddingSpace, Item

    call_command("migrate", verbosity=0)
    tag = uuid.uuid4().hex[:8]
    n, dim = args.items, 50
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    import io

    buf = io.BytesIO()
    np.save(buf, matrix)
    space = EmbeddingSpace(name=f"bench-{tag}", dimension=dim, sha256="0" * 64, item_count=n)
    space.matrix.save(f"bench-{tag}.npy", ContentFile(buf.getvalue()), save=False)
    space.save()
    Item.objects.bulk_create(
        (Item(space=space, key=f"k{tag}{i:07d}", row=i) for i in range(n)), batch_size=5000
    )
    item_ids = np.array(
        Item.objects.filter(space=space).order_by("row").values_list("id", flat=True)
    )
    User = get_user_model()
    users = User.objects.bulk_create(
        [User(username=f"bench-{tag}-{a}") for a in range(args.annotators)]
    )
    users = list(User.objects.filter(username__startswith=f"bench-{tag}-").order_by("id"))
    studies = {}
    for overlap, strategy in [(2, "random"), (1, "random"), (1, "stratified"), (1, "uncertainty")]:
        study = Study.objects.create(
            name=f"bench-{tag}-{strategy}-k{overlap}",
            space=space,
            strategy=strategy,
            overlap=overlap,
        )
        Membership.objects.bulk_create(Membership(user=u, study=study) for u in users)
        studies[(overlap, strategy)] = study
    # Every study gets its own EXPLORE version, marked informative (the current metric the
    # strategies read: issue 35 makes no version informative by default); the judgments go
    # into the overlap-2 study and, for the strategy studies, the prolific annotator's share
    # (what the sampler must skip).
    q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    sigma = (q * rng.uniform(0.001, 0.05, size=dim)) @ q.T
    buf = io.BytesIO()
    np.save(buf, sigma)
    for study in studies.values():
        version = MetricVersion(
            study=study,
            method="explore",
            status="ready",
            dimension=dim,
            verdict="informative",
            informative=True,
        )
        version.sigma.save(f"sigma-{study.pk}.npy", ContentFile(buf.getvalue()), save=False)
        version.save()

    total = args.judgments
    prolific = users[0]
    annotator_idx = rng.integers(1, len(users), size=total)
    annotator_idx[: total // 20] = 0  # the timed annotator: 5% of all answers
    i = rng.integers(n, size=total)
    j = rng.integers(n, size=total)
    keep = i != j
    lo, hi = np.minimum(i, j)[keep], np.maximum(i, j)[keep]
    who = annotator_idx[keep]
    key = who.astype(np.int64) * n * n + lo.astype(np.int64) * n + hi
    _, first = np.unique(key, return_index=True)
    first = np.sort(first)[:total]
    lo, hi, who = lo[first], hi[first], who[first]

    field = PairJudgment._meta.get_field("client_id")
    created = PairJudgment._meta.get_field("created_at")
    from django.utils import timezone

    now = created.get_db_prep_value(timezone.now(), connection)
    table = PairJudgment._meta.db_table
    sql = (
        f"INSERT INTO {table} (study_id, item_a_id, item_b_id, label, annotator_id, source, "
        "provenance, client_id, elapsed_ms, is_gold, created_at) "
        "VALUES (%s, %s, %s, %s, %s, 'annotated', '', %s, %s, %s, %s)"
    )
    labels = np.array(["comparable", "incomparable", "unsure"])[rng.integers(3, size=lo.size)]
    user_ids = np.array([u.pk for u in users])
    main = studies[(2, "random")]
    started = time.perf_counter()

    def rows(study_id, sel):
        for a, b, lab, u in zip(
            item_ids[lo[sel]], item_ids[hi[sel]], labels[sel], user_ids[who[sel]], strict=True
        ):
            yield (
                study_id,
                int(a),
                int(b),
                str(lab),
                int(u),
                field.get_db_prep_value(uuid.uuid4(), connection),
                1500,
                False,
                now,
            )

    batches = [(main.pk, np.arange(lo.size))]
    for (overlap, _), study in studies.items():
        if overlap == 1:
            batches.append((study.pk, np.flatnonzero(who == 0)))
    inserted = 0
    for study_id, sel in batches:
        for start in range(0, sel.size, 20000):
            chunk = sel[start : start + 20000]
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.executemany(sql, list(rows(study_id, chunk)))
            inserted += chunk.size
            print(f"\r  inserted {inserted:,} judgments", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"built in {time.perf_counter() - started:.1f}s: {inserted:,} judgments stored, "
        f"{int((who == 0).sum()):,} of them by the timed annotator (per study)"
    )
    return studies, prolific


def percentiles(samples_ms):
    p50, p95, p99 = np.percentile(samples_ms, [50, 95, 99])
    return f"p50 {p50:6.2f}  p95 {p95:6.2f}  p99 {p99:6.2f} ms"


def measure(studies, user, repeats: int):
    from django.test import Client

    from annotation.labelling.sampling import next_pair

    client = Client()
    client.force_login(user)
    print(f"\n{'path':<34} {'sampler only':<40} HTTP GET next-pair")
    for (overlap, strategy), study in studies.items():
        study.refresh_from_db()
        name = f"overlap k={overlap}" if overlap > 1 else f"strategy {strategy}"
        url = f"/api/studies/{study.pk}/next-pair/"
        reasons = set()
        for _ in range(10):  # warm caches: pool ids, Sigma factor, page cache
            reasons.add(next_pair(study=study, user=user).reason)
            assert client.get(url).status_code == 200
        sampler, http = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            pair = next_pair(study=study, user=user)
            sampler.append((time.perf_counter() - t) * 1000)
            reasons.add(pair.reason)
            t = time.perf_counter()
            response = client.get(url)
            http.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200
        label = f"{name} ({'/'.join(sorted(reasons))})"
        print(f"{label:<34} {percentiles(sampler):<40} {percentiles(http)}")


def measure_reads(studies, user, repeats: int):
    """The other reads of the labelling and review pages, on the 1M-judgment study."""
    from django.contrib.auth import get_user_model

    from annotation.groups.selectors import item_search
    from annotation.selectors import judgments_recent

    study = studies[(2, "random")]
    study.refresh_from_db()
    staff = get_user_model().objects.create(
        username=f"bench-staff-{uuid.uuid4().hex[:6]}", is_staff=True
    )
    newest = judgments_recent(study=study, user=staff, limit=1)[0].pk
    reads = {
        "your last 10 answers": lambda: judgments_recent(study=study, user=user, limit=10),
        "review: 100 newest": lambda: judgments_recent(study=study, user=staff, limit=100),
        "review: 100 from the middle": lambda: judgments_recent(
            study=study, user=staff, limit=100, before_id=newest // 2
        ),
        "item prefix search": lambda: item_search(
            space_id=study.space_id, query="k" + study.name[6:14] + "00042"
        ),
    }
    print()
    for name, read in reads.items():
        read()
        samples = []
        for _ in range(max(20, repeats // 5)):
            t = time.perf_counter()
            read()
            samples.append((time.perf_counter() - t) * 1000)
        print(f"{name:<34} {percentiles(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 judgments, 60 repeats")
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    if args.quick:
        args.judgments, args.repeats = 20_000, 60
    workdir = Path(tempfile.mkdtemp(prefix="fm-bench-"))
    try:
        url = configure(workdir)
        from django.db import connection

        print(
            f"database: {connection.vendor} ({url.split('@')[-1]}), items {args.items}, "
            f"annotators {args.annotators}, judgments {args.judgments:,}"
        )
        rng = np.random.default_rng(0)
        studies, user = build(args, rng)
        measure(studies, user, args.repeats)
        measure_reads(studies, user, args.repeats)
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
