"""A study admin defines a WEAT test in Chromium, with no Django admin: from the WEAT table to the
form, target words found with the search box (a click, and Enter), the other sets pasted (one
word not in the space), a preview under the Euclidean and the current metric with the unknown
word listed, then save. The worker's job (``weat_test_evaluate``, run here as the worker would)
fills the table's cells; the page passes axe-core. The task message is captured instead of sent
(the test has no worker)."""

from __future__ import annotations

import pytest
from celery import current_app
from django.urls import reverse

from learning.evaluation import weat_tests
from learning.models import WeatResult, WeatTest
from tests.browser.test_dashboards import (
    PASSWORD,
    metric_study,  # noqa: F401  (fixture)
)
from tests.browser.test_every_page import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_builds_previews_and_saves_a_weat_test(
    logged_in_page,
    live_server,
    screenshot,
    metric_study,  # noqa: F811
    monkeypatch,
):
    sent = []
    monkeypatch.setattr(
        current_app, "send_task", lambda name, **options: sent.append((name, options["args"]))
    )
    study, versions = metric_study["study"], metric_study["versions"]
    page = logged_in_page(metric_study["users"]["adm"], password=PASSWORD)
    page.goto(live_server.url + reverse("learning:study-weat", args=[study.pk]))
    page.click("#weat-new")
    page.wait_for_url(f"**{reverse('learning:study-weat-new', args=[study.pk])}")
    page.fill("#id_name", "Words / Pleasant")
    page.select_option("#id_kind", "unfair")
    page.fill("#id_x_name", "Early words")

    # X: two words found with the search (a click on "Add", then Enter for the first match).
    page.fill("#search-X", "word1")
    page.click("#results-X button[aria-label='Add word1']")
    page.fill("#search-X", "word2")
    page.wait_for_selector("#results-X button[aria-label='Add word2']")
    page.press("#search-X", "Enter")
    assert page.input_value("#id_x_words") == "word1\nword2"
    page.fill("#search-X", "zebra")
    page.wait_for_selector("#results-X >> text=No word of the space starts with")

    # Y, A, B: pasted lists, one word not in the space.
    page.fill("#id_y_words", "word3\nword4\nnotaword")
    page.fill("#id_a_words", "word5, word6")
    page.fill("#id_b_words", "word7\nword8")
    page.click("#weat-preview-button")
    page.wait_for_selector("#weat-preview")
    rows = page.locator("#weat-preview tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("th").inner_text() == "Euclidean"
    assert rows.nth(1).locator("th").inner_text() == f"face-1 (#{versions[0].pk})"
    assert "notaword" in page.inner_text("#weat-unknown")
    assert page.input_value("#id_y_words") == "word3\nword4"  # not added
    assert page.input_value("#id_x_name") == "Early words"
    assert blocking_violations(page, live_server) == []
    screenshot(page, "weat-test-preview")
    assert not WeatTest.objects.filter(name="Words / Pleasant").exists()

    page.click("#weat-save-button")
    page.wait_for_url(f"**{reverse('learning:study-weat', args=[study.pk])}")
    assert "“Words / Pleasant” saved" in page.inner_text(".messages")
    test = WeatTest.objects.get(name="Words / Pleasant")
    assert (test.x_words, test.y_words, test.kind) == (
        ["word1", "word2"],
        ["word3", "word4"],
        "unfair",
    )
    assert sent == [("learning.weat_test", [test.pk])]

    # The worker's job; then the table shows the test's results under every metric.
    assert weat_tests.weat_test_evaluate(test.pk) == 1 + len(versions)
    page.reload()
    cells = page.locator(f"#weat-table tr[data-test='{test.pk}'] td.cell")
    assert cells.count() == 1 + len(versions)
    assert WeatResult.objects.filter(test=test).count() == 1 + len(versions)
    assert page.console_errors == []
