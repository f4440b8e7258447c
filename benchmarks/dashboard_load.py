"""The study dashboard's load in a real Chromium: cold (a new browser, empty caches) and warm.

    .venv/bin/python -m pytest benchmarks/dashboard_load.py -s -p no:cacheprovider  # ROUNDS=5

A pytest module (it reuses the browser tests' study: two annotators, three metric versions,
WEAT results, a shipped label-efficiency measurement; tests/browser/test_dashboards.py), run on
demand, never by the suite. For each round it launches a fresh Chromium (a new profile: no HTTP
cache, no compiled-code cache), logs a reviewer in, opens the dashboard and times until its four
charts are drawn (``svg.main-svg`` in each), then opens it twice more (warm). It does so with
the plotly bundle the pages load (``plotly-basic.min.js``: bar and scatter traces, what the
charts use) and, by answering that URL with the full ``plotly.min.js``, with the full bundle the
pages loaded before; and prints the median and range of each, plus the server's time to the
first byte. Needs PostgreSQL (DATABASE_URL) like the browser tests, Chromium at
/usr/bin/chromium.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import pytest
from django.urls import reverse

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.test_dashboards import PASSWORD, metric_study  # noqa: F401 - the fixture
from tests.conftest import media_root  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
FULL = ROOT / "static/vendor/plotly/plotly.min.js"
CHARTS = 4
DRAWN = "document.querySelectorAll('.chart .plot-container svg.main-svg').length"
TTFB = "performance.getEntriesByType('navigation')[0].responseStart"


def _open(page, url: str) -> tuple[float, float]:
    start = time.monotonic()
    page.goto(url)
    while page.evaluate(DRAWN) < CHARTS:
        page.wait_for_timeout(10)
    return time.monotonic() - start, page.evaluate(TTFB) / 1000


def _round(playwright, live_server, user, url: str, bundle: str) -> list[tuple[float, float]]:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        if bundle == "full":
            body = FULL.read_bytes()
            page.route(
                "**/plotly-basic.min.js",
                lambda route: route.fulfill(body=body, content_type="text/javascript"),
            )
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", user.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        return [_open(page, url) for _ in range(3)]  # cold, then warm twice
    finally:
        browser.close()


def _summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s (range {min(values):.2f}–{max(values):.2f})"


def test_dashboard_load(live_server, metric_study):  # noqa: F811
    from playwright.sync_api import sync_playwright

    rounds = int(os.environ.get("ROUNDS", "5"))
    study, user = metric_study["study"], metric_study["users"]["rev"]
    url = live_server.url + reverse("learning:study-dashboard", args=[study.pk])
    results: dict[str, list[list[tuple[float, float]]]] = {"basic": [], "full": []}
    with sync_playwright() as playwright:
        _round(playwright, live_server, user, url, "basic")  # the server's own first requests
        for _ in range(rounds):
            for bundle in ("full", "basic"):  # alternated: both see the same machine load
                results[bundle].append(_round(playwright, live_server, user, url, bundle))
    for bundle, runs in results.items():
        size = (FULL if bundle == "full" else FULL.with_name("plotly-basic.min.js")).stat().st_size
        print(f"\nplotly {bundle} ({size / 1e6:.1f} MB), {rounds} rounds:")
        print(f"  first load (new browser): {_summary([r[0][0] for r in runs])}")
        print(f"  warm loads:               {_summary([t for r in runs for t, _ in r[1:]])}")
        print(f"  server time to 1st byte:  {_summary([b for r in runs for _, b in r])}")
