"""In real Chromium: two annotators disagree on the labelling page, a reviewer resolves the pair
with one key, and the adjudicated label is what the fit's training data holds; the adjudication
page passes axe in the light and the dark theme."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Adjudication, Membership, PairJudgment, Study
from learning.refits import snapshots
from learning.refits.pairs import pair_data
from tests.annotation.factories import make_space, make_study, make_user
from tests.browser.conftest import wait_until
from tests.browser.test_every_page import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def answer_on_the_labelling_page(page, live_server, study, key: str) -> None:
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    page.keyboard.press(key)
    wait_until(page, "document.querySelectorAll('#recent li.recent-saved').length === 1")


def test_a_reviewer_resolves_a_disagreement_with_one_key_and_the_fit_reads_it(
    media_root, logged_in_page, live_server, screenshot
):
    space = make_space(name="adjudication-space")
    study = make_study(space=space, name="Adjudication study", pool=Study.Pool.KEYS)
    left, right = list(space.items.order_by("row"))[:2]
    study.pool_keys.set([left, right])  # one pair only: both annotators get it
    ann1 = make_user("anna", study=study, role=Membership.Role.ANNOTATOR)
    ann2 = make_user("bert", study=study, role=Membership.Role.ANNOTATOR)
    reviewer = make_user("rita", study=study, role=Membership.Role.REVIEWER)

    answer_on_the_labelling_page(logged_in_page(ann1), live_server, study, "1")
    answer_on_the_labelling_page(logged_in_page(ann2), live_server, study, "2")
    labels = dict(PairJudgment.objects.values_list("annotator__username", "label"))
    assert labels == {"anna": "comparable", "bert": "incomparable"}

    page = logged_in_page(reviewer)
    page.goto(live_server.url + reverse("annotation:adjudication", args=[study.pk]))
    assert "0 of 1 disagreement resolved" in page.inner_text("#adjudication-progress")
    shown = page.inner_text("#adjudication-pair")
    assert left.key in shown
    assert right.key in shown
    answers = page.inner_text("#pair-answers")
    assert "anna" in answers
    assert "bert" in answers
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert blocking_violations(page, live_server) == [], scheme
    screenshot(page, "adjudication-dark")
    page.set_viewport_size({"width": 375, "height": 740})  # a phone: nothing wider than it
    width = page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    )
    assert width <= 375, width
    assert blocking_violations(page, live_server) == []
    page.set_viewport_size({"width": 1366, "height": 768})

    page.emulate_media(color_scheme="light")
    with page.expect_navigation():
        page.keyboard.press("2")  # one key: incomparable
    assert "1 of 1 disagreement resolved" in page.inner_text("#adjudication-progress")
    assert "Every disagreement is resolved" in page.inner_text("#adjudication-none")
    assert blocking_violations(page, live_server) == []
    decision = Adjudication.objects.get(study=study)
    assert (decision.label, decision.decided_by_id) == ("incomparable", reviewer.pk)

    marks = snapshots.study_data_marks(study_id=study.pk)
    snapshot = snapshots.judgment_snapshot(
        study_id=study.pk, watermark=marks.judgment_watermark, excluded_annotators=[]
    )
    pairs = pair_data(snapshot, policy="all", validation_share=0.0)
    assert pairs.y.tolist() == [0.0]  # one observation: the adjudicated "incomparable"

    page.goto(live_server.url + reverse("annotation:review", args=[study.pk]))
    assert "1 of 1 disagreement resolved" in page.inner_text("#review-disagreements")
    assert page.console_errors == []
