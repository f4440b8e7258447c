"""Dashboards in a real Chromium: a reviewer opens each page and the charts render.

The admin then publishes a version with the button, creates an API token on the tokens page
and downloads the published Sigma with it. Screenshots go to test-artifacts/. The browser,
login and screenshot fixtures are tests/browser/conftest.py's.
"""

from __future__ import annotations

import hashlib
import io
import json
import urllib.request

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.urls import reverse

from accounts.models import ApiToken
from annotation.models import Label, Membership, PairJudgment, Study
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from learning.versions.sigmas import sigma_of
from spaces.models import EmbeddingSpace, Item
from tests.annotation.factories import npy_bytes

PASSWORD = "a-browser-pw-1"
DIM = 6

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def ship_measurement(path, monkeypatch) -> None:
    """A small label-efficiency measurement (benchmark format) as the shipped one."""
    from learning.dashboards import curves

    labels = [20, 28, 40, 57, 80, 113, 160]
    runs = [
        {
            "strategy": strategy,
            "seed": seed,
            "labels": labels[: len(labels) - seed],  # later checkpoints have fewer seeds
            "loglik": [-0.65 + (0.02 + 0.01 * k) * i - 0.005 * seed for i in range(7 - seed)],
        }
        for k, strategy in enumerate(["random", "targeted", "uncertainty"])
        for seed in range(3)
    ]
    stick = {"start": -0.65, "full": -0.5, "target": -0.51, "sigma0": -0.45}
    path.write_text(json.dumps({"runs": runs, "noise": {}, "yardstick": stick}))
    monkeypatch.setattr(curves, "MEASUREMENT_PATH", path)


@pytest.fixture
def metric_study(media_root, tmp_path, monkeypatch):
    """A study with judgments by two annotators, three metric versions and WEAT results, and a
    shipped label-efficiency measurement."""
    ship_measurement(tmp_path / "label_efficiency.json", monkeypatch)
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(80, DIM)).astype(np.float32)
    space = EmbeddingSpace(
        name="browser space",
        dimension=DIM,
        item_count=80,
        sha256=hashlib.sha256(npy_bytes(matrix)).hexdigest(),
    )
    space.matrix.save("browser.npy", ContentFile(npy_bytes(matrix)), save=False)
    space.save()
    Item.objects.bulk_create(Item(space=space, key=f"word{r}", row=r) for r in range(80))
    study = Study.objects.create(name="Browser study", space=space)
    users = {}
    for name, role in [
        ("ann1", "annotator"),
        ("ann2", "annotator"),
        ("rev", "reviewer"),
        ("adm", "admin"),
    ]:
        users[name] = get_user_model().objects.create_user(name, password=PASSWORD)
        Membership.objects.create(user=users[name], study=study, role=role)
    items = list(Item.objects.filter(space=space).order_by("row"))
    PairJudgment.objects.bulk_create(
        PairJudgment(
            study=study,
            annotator=users[who],
            item_a=items[2 * i],
            item_b=items[2 * i + 1],
            elapsed_ms=1200 + 40 * i,
            label=Label.COMPARABLE if (i % 3 or who == "ann1") else Label.INCOMPARABLE,
        )
        for i in range(30)
        for who in ("ann1", "ann2")
    )
    versions = []
    for i, (method, label) in enumerate(
        [("face", "face-1"), ("face", "face-2"), ("explore", "explore")]
    ):
        if method == "face":
            q, _ = np.linalg.qr(rng.normal(size=(DIM, 1 + i)))
            sigma = np.eye(DIM) - q @ q.T
        else:
            root = rng.normal(size=(DIM, DIM))
            sigma = root @ root.T / DIM
        content = npy_bytes(sigma)
        version = MetricVersion(
            study=study,
            method=method,
            label=label,
            status="ready",
            dimension=DIM,
            sigma_sha256=hashlib.sha256(content).hexdigest(),
            judgment_watermark=10 * (i + 1),
            # judged informative (a verdict is never a default, issue 35): the current metric
            verdict="informative",
            informative=True,
            diagnostics={
                "spectrum": sorted(np.linalg.eigvalsh(sigma).tolist(), reverse=True),
                # Only EXPLORE records a held-out log-likelihood (a validation split).
                **(
                    {"heldout_loglik": -0.6 + 0.05 * i, "heldout_loglik_ci": [-0.6, -0.4]}
                    if method == "explore"
                    else {}
                ),
            },
            counts={"comparable": 40, "incomparable": 20},
            fingerprint=f"b{i}",
            is_published=(i == 0),
        )
        version.sigma.save(f"browser-{i}.npy", ContentFile(content), save=False)
        version.save()
        versions.append(version)
    suite = WeatSuite.objects.create(name="browser suite")
    suite.studies.add(study)
    for position, kind in enumerate(["meaningful", "unfair"]):
        test = WeatTest.objects.create(
            suite=suite,
            position=position,
            name=f"{kind} test",
            kind=kind,
            x_name="X",
            y_name="Y",
            a_name="A",
            b_name="B",
            x_words=["word0", "word1"],
            y_words=["word2", "word3"],
            a_words=["word4"],
            b_words=["word5"],
        )
        for version, p in [(None, 0.01), *zip(versions, [0.02, 0.3, 0.04], strict=True)]:
            WeatResult.objects.create(
                test=test,
                space=space,
                metric_version=version,
                metric=version.label if version else "euclidean",
                p_value=p,
                effect_size=1.1 if p < 0.05 else 0.2,
                statistic=0.4,
                n_partitions=6,
                exact=True,
                ci_low=0.05,
                ci_high=1.4,
                scores={"word0": 0.3, "word1": 0.25, "word2": -0.1, "word3": -0.2},
            )
    return {"study": study, "versions": versions, "users": users, "test": test}


def test_reviewer_sees_every_dashboard_with_rendered_charts(
    logged_in_page, screenshot, live_server, metric_study
):
    study, versions = metric_study["study"], metric_study["versions"]
    page = logged_in_page(metric_study["users"]["rev"], password=PASSWORD)
    pages = [
        ("dashboard", reverse("learning:study-dashboard", args=[study.pk]), 4),
        ("weat", reverse("learning:study-weat", args=[study.pk]), 0),
        (
            "weat-test",
            reverse("learning:study-weat-test", args=[study.pk, metric_study["test"].pk]),
            1,
        ),
        ("drift", reverse("learning:study-drift", args=[study.pk]), 4),
        ("version", reverse("learning:version-detail", args=[versions[1].pk]), 1),
        (
            "compare",
            reverse("learning:version-compare") + f"?a={versions[0].pk}&b={versions[1].pk}",
            1,
        ),
    ]
    for name, url, charts in pages:
        response = page.goto(live_server.url + url)
        assert response.status == 200, name
        if charts:
            page.wait_for_selector(".chart .plot-container svg.main-svg", timeout=15_000)
            assert page.locator(".chart .plot-container").count() >= charts, name
        screenshot(page, f"dashboards-{name}")
    assert page.console_errors == []
    # The learning curves: this study's EXPLORE version, and the measured strategies with the
    # study's own (random, the default) drawn thick.
    page.goto(live_server.url + reverse("learning:study-dashboard", args=[study.pk]))
    page.wait_for_selector("#chart-efficiency .plot-container svg.main-svg")
    page.wait_for_selector("#chart-curve .plot-container svg.main-svg")
    assert page.evaluate("document.getElementById('chart-curve').data[0].x") == [60]
    traces = page.evaluate(
        "document.getElementById('chart-efficiency').data.map((t) => [t.name, t.line.width])"
    )
    assert traces == [["random (this study)", 4], ["targeted", 1.5], ["uncertainty", 1.5]]
    assert page.locator("#efficiency-table tbody tr").count() == 7
    # The held-out log-likelihood chart has a legend entry only for methods with values.
    page.goto(live_server.url + reverse("learning:study-drift", args=[study.pk]))
    page.wait_for_selector("#chart-loglik .plot-container svg.main-svg")
    names = page.evaluate("document.getElementById('chart-loglik').data.map((t) => t.name)")
    assert names == ["explore"]
    # The WEAT table marks significance and keeps the 95 % interval on hover.
    page.goto(live_server.url + reverse("learning:study-weat", args=[study.pk]))
    cell = page.locator("#weat-table td.cell.significant").first
    assert "95% interval [" in cell.get_attribute("title")
    # The reviewer sees no Publish button.
    page.goto(live_server.url + reverse("learning:version-detail", args=[versions[1].pk]))
    assert page.locator("#publish").count() == 0


def test_admin_publishes_then_downloads_the_sigma_with_a_new_token(
    logged_in_page, screenshot, live_server, metric_study
):
    study, versions = metric_study["study"], metric_study["versions"]
    page = logged_in_page(metric_study["users"]["adm"], password=PASSWORD)
    page.goto(live_server.url + reverse("learning:version-detail", args=[versions[1].pk]))
    page.click("#publish-open")  # Publish asks first and says what downstream users receive
    assert "downstream users" in page.inner_text("[data-testid=publish-consequences]")
    # Never judged (made by hand): the page says so, and a reason is asked for.
    assert "cannot tell yet" in page.inner_text("[data-testid=publish-verdict]")
    page.fill("#publish-reason", "a hand-made test version")
    page.click("#publish")
    page.wait_for_selector("text=is now the published")
    assert "a hand-made test version" in page.inner_text("[data-testid=override]")
    screenshot(page, "dashboards-published")
    versions[1].refresh_from_db()
    assert versions[1].is_published

    page.goto(live_server.url + reverse("accounts:tokens"))
    page.fill("#id_name", "training job")
    page.click("button.primary")
    key = page.locator("#new-token-key").inner_text().strip()
    screenshot(page, "dashboards-token")
    page.reload()  # POST–redirect–GET: a reload neither makes a second token nor shows the key
    assert page.locator("#new-token-key").count() == 0
    assert ApiToken.objects.filter(user=metric_study["users"]["adm"]).count() == 1
    assert page.console_errors == []

    url = live_server.url + reverse("api-published-sigma", args=[study.pk, "face", "npy"])
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
    assert hashlib.sha256(body).hexdigest() == versions[1].sigma_sha256
    np.testing.assert_array_equal(np.load(io.BytesIO(body)), sigma_of(versions[1]))


def test_big_study_shows_computing_then_the_figures_once_the_worker_stored_them(
    logged_in_page, screenshot, live_server, metric_study, settings, monkeypatch
):
    from fairmetric_site.celery import app
    from learning.dashboards import refresh

    settings.DASHBOARD_INLINE_MAX_JUDGMENTS = 1  # every study is "big": never inline
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **options: sent.append(name))
    study = metric_study["study"]
    page = logged_in_page(metric_study["users"]["rev"], password=PASSWORD)
    page.goto(live_server.url + reverse("learning:study-dashboard", args=[study.pk]))
    assert "Computing… (this study has" in page.get_by_test_id("computing").inner_text()
    assert sent == ["learning.dashboard_refresh"]
    screenshot(page, "dashboards-computing")
    refresh.dashboard_refresh(study_id=study.pk)  # what the worker does
    # The page polls the status endpoint and reloads itself into the charts.
    page.wait_for_selector(".chart .plot-container svg.main-svg", timeout=20_000)
    assert page.locator("#annotators").count() == 1
    assert page.console_errors == []
