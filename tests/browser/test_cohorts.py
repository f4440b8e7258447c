"""Issue 37's browser test, in real Chromium: the admin defines a member attribute (asked on
the first visit) and gives members their values on the members page, one annotator answers the
question and both answer pairs on the labelling page as two cohorts, the cohort page shows each
cohort's metric, the test and the fields, the equal-cohort metric is published from its version
page and downloaded with its make-up in the metadata.

Most answers are stored beforehand (six more members, 40 answers each: a cohort needs 100
answers before it gets a metric), and the fits run in the test's process (the same services the
worker's tasks call: ``learning/tasks.py``), so that the test takes seconds, not minutes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Membership, PairJudgment
from learning.cohorts.service import cohort_refit
from learning.models import MetricVersion
from learning.refits.service import refit_study
from tests.annotation.factories import PASSWORD
from tests.browser.test_team_setup import download
from tests.learning.cohorts.world import cohort_study, record_space

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def world(transactional_db, media_root):
    study = cohort_study(*record_space(), name="Cohorts", attribute=False)
    boss = get_user_model().objects.create_user("boss", password=PASSWORD)
    Membership.objects.create(user=boss, study=study, role="admin")
    for username in ("Cohorts-A0", "Cohorts-B0"):
        user = get_user_model().objects.get(username=username)
        user.set_password(PASSWORD)
        user.save()
    return study


def answer(page, study, user, count: int) -> None:
    before = PairJudgment.objects.filter(study=study, annotator__username=user).count()
    for n in range(count):
        page.wait_for_selector("#card-left[data-item-id]")
        page.keyboard.press("1" if n % 2 else "2")
        for _ in range(200):
            if PairJudgment.objects.filter(study=study, annotator__username=user).count() > (
                before + n
            ):
                break
            page.wait_for_timeout(50)
        else:
            raise AssertionError(f"{user}'s answer {n + 1} was not stored")


def test_cohorts_from_attribute_to_a_published_equal_cohort_metric(
    world, logged_in_page, live_server, screenshot
):
    study = world
    admin = logged_in_page(get_user_model().objects.get(username="boss"))
    admin.goto(f"{live_server.url}{reverse('annotation:study-members', args=[study.pk])}")
    admin.fill("#attribute-name", "group")
    admin.fill("#attribute-values", "A, B")
    admin.check("#attribute-ask")
    admin.click("#attribute-form button[type=submit]")
    admin.wait_for_selector("text=group: A, B")
    for member in Membership.objects.filter(study=study, role="annotator"):
        name = member.user.username
        if name == "Cohorts-B0":
            continue  # answers the question on the first visit
        row = admin.locator(f"form[data-attributes='{name}']")
        row.locator("select").select_option(name[-2])
        row.locator("button").click()
        admin.wait_for_selector(f"text={name}: attributes saved.")
    assert Membership.objects.get(user__username="Cohorts-A1").attributes == {"group": "A"}

    # B0's first visit asks the question; A0 has a value already and labels at once.
    for user, value in (("Cohorts-B0", "B"), ("Cohorts-A0", None)):
        page = logged_in_page(get_user_model().objects.get(username=user))
        page.goto(f"{live_server.url}{reverse('annotation:label', args=[study.pk])}")
        if value:
            page.wait_for_selector("#about-you")
            page.select_option("#about-you select", value)
            page.click("#about-you button[type=submit]")
        answer(page, study, user, 3)
        assert page.console_errors == []
    assert Membership.objects.get(user__username="Cohorts-B0").attributes == {"group": "B"}

    # The worker's part, in this process: the pooled refit, then the cohorts'.
    refit_study(study_id=study.pk)
    assert cohort_refit(study_id=study.pk).outcome == "fitted"

    admin.goto(f"{live_server.url}{reverse('learning:study-cohorts', args=[study.pk])}")
    section = admin.locator("section[data-attribute='group']")
    for value in ("A", "B"):
        assert section.locator(f"tr[data-value='{value}'] a").count() == 1
    assert "p = " in section.locator("p.differ").inner_text()
    assert section.locator("ol.differ-fields li").count() == 4
    screenshot(admin, "cohorts-page")
    admin.click("a.equal-version")
    admin.wait_for_selector("[data-testid=cohort]")
    assert "counting equally" in admin.inner_text("[data-testid=cohort]")
    admin.click("#publish-open")
    if admin.locator("#publish-reason").count():  # a verdict that is not informative
        admin.fill("#publish-reason", "the cohorts count equally")
    admin.click("#publish")
    admin.wait_for_selector("text=is now the published")
    equal = MetricVersion.objects.get(study=study, cohort="group:equal")
    assert equal.is_published
    sigma = np.load(io.BytesIO(download(admin, "text=Download Sigma (.npy)")))
    assert sigma.shape == (equal.dimension, equal.dimension)
    meta = admin.request.get(live_server.url + reverse("api-version", args=[equal.pk])).json()
    assert meta["cohort"]["value"] == "equal"
    counts = {c["value"]: (c["members"], c["answers"]) for c in meta["cohort"]["cohorts"]}
    assert counts == {"A": (4, 163), "B": (4, 163)}
    assert admin.console_errors == []
