"""Benchmark: the study dashboard and the metric pages with many judgments and versions.

    .venv/bin/python benchmarks/dashboards.py [--judgments 1000000] [--versions 100]

Builds a throw-away database (SQLite in a temp folder, or DATABASE_URL when set — use a
scratch database, tables are created there) with one study, --judgments answers by 20
annotators (each pair answered twice, 2% gold), --versions FACE/EXPLORE versions with WEAT
results, then prints, through the test client with query counts: the dashboard page with a cold
cache (the "computing…" shell, no computation), the background computation the worker runs
(``learning.dashboard_refresh``), the page with fresh and with stale cached figures, and the
other pages. The cache and broker are kept in the scratch folder.
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--annotators", type=int, default=20)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="fm-bench-"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    os.environ["MEDIA_ROOT"] = str(scratch / "media")
    # The cache and the broker live in the scratch folder: the benchmark's figures must not
    # land in the real cache (study ids repeat), nor its refresh messages in a real queue.
    os.environ["VAR_DIR"] = str(scratch)
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    build_and_measure(args)


def build_and_measure(args) -> None:
    import hashlib

    import numpy as np
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotation.models import GoldPair, Membership, PairJudgment, Study
    from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
    from spaces.models import EmbeddingSpace, Item

    settings.ALLOWED_HOSTS = ["*"]
    rng = np.random.default_rng(0)
    n_items, dim = 5000, 50

    def npy(array) -> bytes:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        return buffer.getvalue()

    started = time.perf_counter()
    matrix = rng.normal(size=(n_items, dim)).astype(np.float32)
    space = EmbeddingSpace(
        name="bench",
        dimension=dim,
        item_count=n_items,
        sha256=hashlib.sha256(npy(matrix)).hexdigest(),
    )
    space.matrix.save("bench.npy", ContentFile(npy(matrix)), save=False)
    space.save()
    Item.objects.bulk_create(
        (Item(space=space, key=f"w{r}", row=r) for r in range(n_items)), batch_size=5000
    )
    item_ids = np.array(
        Item.objects.filter(space=space).order_by("row").values_list("id", flat=True)
    )
    study = Study.objects.create(name="bench", space=space)
    users = [get_user_model().objects.create_user(f"a{i}") for i in range(args.annotators)]
    reviewer = get_user_model().objects.create_user("reviewer")
    Membership.objects.bulk_create(
        [Membership(user=u, study=study) for u in users]
        + [Membership(user=reviewer, study=study, role="reviewer")]
    )
    n_pairs = args.judgments // 2
    codes = rng.choice(n_items * n_items, size=int(n_pairs * 2.2), replace=False)
    a, b = codes // n_items, codes % n_items
    keep = a < b  # canonical pairs; each unordered pair appears at most once
    a, b = a[keep][:n_pairs], b[keep][:n_pairs]
    gold = rng.random(a.size) < 0.02
    GoldPair.objects.bulk_create(
        (
            GoldPair(
                study=study,
                item_a_id=int(item_ids[x]),
                item_b_id=int(item_ids[y]),
                label="comparable",
            )
            for x, y in zip(a[gold], b[gold], strict=True)
        ),
        batch_size=5000,
    )
    labels = np.array(["comparable", "incomparable", "unsure"])
    truth = rng.integers(0, 2, size=a.size)
    first = rng.integers(0, args.annotators, size=a.size)
    second = (first + rng.integers(1, args.annotators, size=a.size)) % args.annotators
    user_ids = np.array([u.pk for u in users])

    def rows():
        for i in range(a.size):
            for who in (first[i], second[i]):
                noisy = truth[i] if rng.random() > 0.15 else 2 - truth[i] // 2
                yield PairJudgment(
                    study=study,
                    annotator_id=int(user_ids[who]),
                    item_a_id=int(item_ids[a[i]]),
                    item_b_id=int(item_ids[b[i]]),
                    label=labels[noisy],
                    elapsed_ms=int(rng.integers(300, 6000)),
                    is_gold=bool(gold[i]),
                )

    PairJudgment.objects.bulk_create(rows(), batch_size=10_000)
    built_judgments = time.perf_counter() - started

    suite = WeatSuite.objects.create(name="bench suite")
    suite.studies.add(study)
    tests = [
        WeatTest.objects.create(
            suite=suite,
            position=i,
            name=f"test {i}",
            kind="unfair" if i > 2 else "meaningful",
            x_name="X",
            y_name="Y",
            a_name="A",
            b_name="B",
            x_words=["w1", "w2"],
            y_words=["w3", "w4"],
            a_words=["w5"],
            b_words=["w6"],
        )
        for i in range(10)
    ]
    for i in range(args.versions):
        method = "face" if i % 2 else "explore"
        q, _ = np.linalg.qr(rng.normal(size=(dim, 3)))
        sigma = np.eye(dim) - q @ q.T if method == "face" else np.eye(dim) + 0.01 * i
        content = npy(sigma)
        version = MetricVersion(
            study=study,
            method=method,
            label=method,
            status="ready",
            dimension=dim,
            sigma_sha256=hashlib.sha256(content).hexdigest(),
            judgment_watermark=i,
            fingerprint=str(i),
            diagnostics={"heldout_loglik": -0.5 - 0.001 * i},
            is_published=i in (0, 1),
        )
        version.sigma.save(f"s{i}.npy", ContentFile(content), save=False)
        version.save()
        WeatResult.objects.bulk_create(
            WeatResult(
                test=t,
                space=space,
                metric_version=version,
                metric=method,
                p_value=float(rng.random()),
                effect_size=float(rng.normal()),
                statistic=0.1,
                n_partitions=1000,
                exact=False,
            )
            for t in tests
        )
    with connection.cursor() as cursor:  # planner statistics, as autovacuum keeps them live
        cursor.execute("ANALYZE")
    print(
        f"built {PairJudgment.objects.count():,} judgments in {built_judgments:.0f} s, "
        f"{args.versions} versions ({connection.vendor})"
    )

    from django.conf import settings
    from django.core.cache import cache

    from learning.dashboards import refresh

    client = Client()
    client.force_login(reviewer)
    url = f"/studies/{study.pk}/dashboard/"
    status_url = f"/studies/{study.pk}/dashboard/status.json"

    def timed_get(label: str, path: str, expect: str) -> None:
        t0 = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        assert expect in response.content.decode(), (label, expect)
        print(f"{label:32s} {time.perf_counter() - t0:7.2f} s  {len(queries):3d} queries")

    client.get(f"/studies/{study.pk}/weat/")  # warm up: imports, templates, the session
    cache.clear()
    if args.judgments >= settings.DASHBOARD_INLINE_MAX_JUDGMENTS:
        timed_get("dashboard page, cold (shell)", url, "Computing…")
        timed_get("dashboard status.json, cold", status_url, '"ready": false')
    else:  # a small study is computed inline on a miss
        timed_get("dashboard page, cold (inline)", url, "Krippendorff")
        cache.clear()
    t0 = time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        refresh.dashboard_refresh(study_id=study.pk)  # what the worker runs
    board = refresh.dashboard_state(study, request_refresh=False).board
    print(
        f"{'background computation (worker)':32s} {time.perf_counter() - t0:7.2f} s  "
        f"{len(queries):3d} queries  (α = {board.alpha:.3f}, "
        f"{board.overlapping_pairs:,} overlapping pairs)"
    )
    timed_get("dashboard page, warm", url, "Krippendorff")
    timed_get("dashboard status.json, warm", status_url, '"ready": true')
    PairJudgment.objects.create(
        study=study,
        annotator=users[0],
        item_a_id=int(item_ids[0]),
        item_b_id=int(item_ids[1]),
        label="comparable",
    )
    timed_get("dashboard page, stale figures", url, "refreshing…")

    versions = list(MetricVersion.objects.filter(study=study).order_by("pk")[:2])
    pages = [
        ("WEAT table, all versions", f"/studies/{study.pk}/weat/?all=1"),
        ("drift (cold)", f"/studies/{study.pk}/drift/"),
        ("drift (warm)", f"/studies/{study.pk}/drift/"),
        ("version page", f"/versions/{versions[1].pk}/"),
        ("compare", f"/versions/compare/?a={versions[0].pk}&b={versions[1].pk}"),
        ("judgments.csv (streamed)", f"/api/studies/{study.pk}/export/judgments.csv"),
    ]
    for label, url in pages:
        t0 = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
            size = (
                sum(len(chunk) for chunk in response)
                if response.streaming
                else len(response.content)
            )
        assert response.status_code == 200, (url, response.status_code)
        print(
            f"{label:32s} {time.perf_counter() - t0:7.2f} s  {len(queries):3d} queries  "
            f"{size / 1e6:8.1f} MB"
        )


if __name__ == "__main__":
    main()
