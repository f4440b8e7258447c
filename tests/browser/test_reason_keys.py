"""In real Chromium: reasons on the labelling page. A differing field's letter marks it as the
reason; the answer's key sends it with that answer only. Keys typed in one burst (reason,
answer, answer, reason, answer) land on the right pairs: no reason is lost or moved to
another pair, and an unsure answer carries none."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.models import Membership, PairJudgment
from annotation.reasons import differing_fields
from spaces.models import Item
from spaces.records.create import record_space_create
from tests.annotation.factories import make_study, make_user
from tests.browser.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def record_study(media_root):
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(8)],
            "age": [21, 34, 45, 52, 27, 63, 38, 49],
            "city": ["Oslo", "Lima", "Pune", "Kyiv", "Lyon", "Baku", "Rome", "Nice"],
            "job": ["cook", "nurse", "pilot", "clerk", "miner", "judge", "baker", "tailor"],
            "paid": ["y", "n", "y", "n", "y", "n", "y", "n"],
        }
    )
    space = record_space_create(
        name="reason-records",
        frame=frame,
        numeric=["age"],
        categorical=["city", "job"],
        label_column="paid",
        key_column="id",
    )
    study = make_study(space=space, name="Reasons", target_per_annotator=20, overlap=1, gold_rate=0)
    return study, make_user("rea", study=study, role=Membership.Role.ANNOTATOR)


def fields_of(judgment) -> list[str]:
    a, b = (Item.objects.get(pk=pk) for pk in (judgment.item_a_id, judgment.item_b_id))
    return differing_fields(
        {"key": a.key, "payload": a.shown_payload}, {"key": b.key, "payload": b.shown_payload}
    )


def test_reason_letters_travel_with_their_own_answer_in_a_burst(
    record_study, logged_in_page, live_server, screenshot
):
    study, annotator = record_study
    page = logged_in_page(annotator)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#record-compare button.reason")
    # Every differing field has a letter; the hidden label column none.
    letters = page.locator("#record-compare button.reason").all_inner_texts()
    assert letters == ["A", "B", "D"]
    assert "paid" not in page.inner_text("#record-compare")
    page.keyboard.press("b")
    assert page.get_attribute("#record-compare button.reason >> nth=1", "aria-pressed") == "true"
    assert page.inner_text("#reasons-line").startswith("Reason: ")
    screenshot(page, "reasons-marked")
    page.keyboard.press("b")  # unmarked again
    assert page.inner_text("#reasons-line") == ""
    page.keyboard.press("z")  # no field has it: said, not silently dropped
    assert "“Z” is no differing field's letter" in page.inner_text("#status")
    # One burst, no waiting between keys.
    for key in ["a", "2", "1", "d", "b", "2", "b", "0"]:
        page.keyboard.press(key)
    wait_until(page, "document.querySelectorAll('#recent li.recent-saved').length === 4")
    answers = list(PairJudgment.objects.filter(study=study).order_by("id"))
    assert [j.label for j in answers] == ["incomparable", "comparable", "incomparable", "unsure"]
    assert [len(fields_of(j)) for j in answers] == [3, 3, 3, 3]
    expected = [
        [fields_of(answers[0])[0]],
        [],
        [fields_of(answers[2])[2], fields_of(answers[2])[1]],  # in the order pressed
        [],  # unsure: the mark is dropped
    ]
    assert [j.reasons for j in answers] == expected
    # A letter names a field of the pair on screen, so it is pressed once the fifth pair is
    # drawn (a letter pressed while no pair is shown is refused, said in the status line; under
    # load the queue's refill can lag behind the fourth answer). Its mark, nothing sent yet:
    wait_until(page, "document.querySelectorAll('#record-compare button.reason').length > 0")
    page.keyboard.press("a")
    assert page.get_attribute("#record-compare button.reason >> nth=0", "aria-pressed") == "true"
    assert PairJudgment.objects.filter(study=study).count() == 4
    page.keyboard.press("1")
    wait_until(page, "document.querySelectorAll('#recent li.recent-saved').length === 5")
    last = PairJudgment.objects.filter(study=study).latest("id")
    assert last.reasons == [fields_of(last)[0]]
    assert f"comparable ({last.reasons[0]})" in page.inner_text("#recent li >> nth=0")
    assert page.console_errors == []
