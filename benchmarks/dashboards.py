"""Benchmark: the study dashboard and the metric pages with many judgments and versions.

    .venv/bin/python benchmarks/dashboards.py [--judgments 1000000] [--versions 100]
        [--burst 50] [--reuse]

Builds a throw-away database (SQLite in a temp folder, or DATABASE_URL when set — use a
scratch database, tables are created there) with one study, --judgments answers by 20
annotators (each pair answered twice, 2% gold), --versions FACE/EXPLORE versions with WEAT
results, then prints, through the test client with query counts: the dashboard page with a cold
cache (the "computing…" shell, no computation), the background computation the worker runs
(``learning.dashboard_refresh``: the first one computes everything), the page with fresh and
with stale cached figures, then the worker's refresh after a burst of --burst new answers (from
the figures' per-study tallies, ``learning/dashboards/tallies.py``) and, for comparison, a
full computation of the same figures, each with its wall and CPU time and the load average,
and the other pages. The cache, the broker and the tallies are kept in the scratch folder.
``--figures-only`` stops there; ``--reuse`` measures the last "bench" study of DATABASE_URL with at least --judgments answers
instead of building one (the bursts of earlier runs stay in it).
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
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--figures-only", action="store_true", help="not the other pages")
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
    found = reused(args) if args.reuse else None
    study, users, reviewer, item_ids = found or build(args)
    measure(args, study, users, reviewer, item_ids)


def reused(args):
    """The last "bench" study with at least --judgments answers, its annotators, reviewer and
    item ids; None when there is none."""
    import numpy as np
    from django.db.models import Count

    from annotation.models import Membership, Study
    from spaces.models import Item

    study = (
        Study.objects.filter(name="bench")
        .annotate(n=Count("judgments"))
        .filter(n__gte=args.judgments)
        .order_by("-pk")
        .first()
    )
    if study is None:
        return None
    members = Membership.objects.filter(study=study).select_related("user").order_by("user_id")
    users = [m.user for m in members if m.role != "reviewer"]
    reviewer = next(m.user for m in members if m.role == "reviewer")
    item_ids = np.array(
        Item.objects.filter(space=study.space).order_by("row").values_list("id", flat=True)
    )
    print(f"reusing study {study.pk}: {study.n:,} judgments")
    return study, users, reviewer, item_ids


def build(args):
    import hashlib

    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile
    from django.db import connection

    from annotation.models import GoldPair, Membership, PairJudgment, Study
    from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
    from spaces.models import EmbeddingSpace, Item

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
    return study, users, reviewer, item_ids


def burst(study, users, item_ids, size: int, rng) -> int:
    """``size`` new answers by people, timed: half of them later answers to pairs already
    answered (by annotators who had not answered them; gold flag as the pair's), half first
    answers to new pairs. Returns how many were added."""
    from django.db.models import Max, Min

    from annotation.models import GoldPair, PairJudgment

    bounds = PairJudgment.objects.filter(study=study).aggregate(lo=Min("id"), hi=Max("id"))
    picks = rng.integers(bounds["lo"], bounds["hi"] + 1, size=size)
    pairs = set(
        PairJudgment.objects.filter(study=study, id__in=picks.tolist())
        .values_list("item_a_id", "item_b_id")
        .distinct()[: size // 2]
    )
    rows = []
    for a, b in pairs:
        answered = PairJudgment.objects.filter(study=study, item_a_id=a, item_b_id=b)
        done = set(answered.values_list("annotator_id", flat=True))
        free = [u for u in users if u.pk not in done]
        gold = GoldPair.objects.filter(study=study, item_a_id=a, item_b_id=b).exists()
        rows.append((free[rng.integers(len(free))], a, b, gold))
    while len(rows) < size:
        x, y = sorted(int(v) for v in rng.choice(item_ids, size=2, replace=False))
        if not PairJudgment.objects.filter(study=study, item_a_id=x, item_b_id=y).exists():
            rows.append((users[rng.integers(len(users))], x, y, False))
    labels = ["comparable", "incomparable", "unsure"]
    PairJudgment.objects.bulk_create(
        PairJudgment(
            study=study,
            annotator=user,
            item_a_id=a,
            item_b_id=b,
            label=labels[rng.choice(3, p=[0.45, 0.45, 0.1])],
            elapsed_ms=int(rng.integers(300, 6000)),
            is_gold=gold,
        )
        for user, a, b, gold in rows
    )
    return len(rows)


def measure(args, study, users, reviewer, item_ids) -> None:
    import dataclasses

    import numpy as np
    from django.conf import settings
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from learning.dashboards import refresh, tallies
    from learning.models import MetricVersion

    settings.ALLOWED_HOSTS = ["*"]
    rng = np.random.default_rng()

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

    def worker_refresh(label: str):
        """The worker's refresh, timed: wall, this process's CPU, the load average."""
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        with CaptureQueriesContext(connection) as queries:
            refresh.dashboard_refresh(study_id=study.pk)  # what the worker runs
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        board = refresh.dashboard_state(study, request_refresh=False).board
        print(
            f"{label:32s} {wall:7.2f} s  {len(queries):3d} queries  (CPU {cpu:.2f} s, load "
            f"{load:.1f}; α = {board.alpha:.6f}, {board.overlapping_pairs:,} overlapping pairs)"
        )
        return dataclasses.replace(board, computed_at=0.0)

    worker_refresh("background computation (worker)")  # no tallies yet: everything
    timed_get("dashboard page, warm", url, "Krippendorff")
    timed_get("dashboard status.json, warm", status_url, '"ready": true')
    added = burst(study, users, item_ids, args.burst, rng)
    timed_get("dashboard page, stale figures", url, "refreshing…")
    worker_refresh(f"refresh after {added} new answers")
    added = burst(study, users, item_ids, args.burst, rng)
    again = worker_refresh(f"again, after {added} new answers")
    tallies.tallies_path(study).unlink()
    cache.clear()
    full = worker_refresh("the same, computed in full")
    print(f"figures from the tallies equal the full computation's: {again == full}")
    if args.figures_only:
        return

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
