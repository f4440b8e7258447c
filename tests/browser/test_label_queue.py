"""In real Chromium: no key press is lost on the pair page, on a fast or a slowed server; the
tab warns before closing with unsent answers; any recent answer can be changed; `?` shows help.
"""

from __future__ import annotations

import re
import time

import pytest

from annotation.labelling import api as annotation_api
from annotation.models import Membership, PairComment, PairJudgment, PairSkip
from tests.annotation.factories import make_space, make_study, make_user
from tests.browser.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LABEL_OF = {"1": "comparable", "2": "incomparable", "0": "unsure"}
UNSENT = "Number(document.getElementById('label-app').dataset.unsent || '0')"


@pytest.fixture
def study_and_annotator(media_root):
    study = make_study(space=make_space(name="queue-space"), name="Queue", target_per_annotator=40)
    return study, make_user("quick", study=study, role=Membership.Role.ANNOTATOR)


@pytest.fixture
def slow_api(monkeypatch):
    """Delay the judgment POST and GET next-pair of the live server (same process) by
    ``seconds``: a slow server as the annotator sees it."""

    def slow(seconds: float) -> None:
        for view, method in [
            (annotation_api.JudgmentListCreate, "post"),
            (annotation_api.JudgmentBatch, "post"),
            (annotation_api.NextPairView, "get"),
        ]:
            original = getattr(view, method)

            def delayed(self, request, *args, _original=original, **kwargs):
                time.sleep(seconds)
                return _original(self, request, *args, **kwargs)

            monkeypatch.setattr(view, method, delayed)

    return slow


def status_is_truthful(page) -> None:
    """The status line counts exactly the answers not yet stored (read in one evaluation)."""
    unsent, text = page.evaluate(f"[{UNSENT}, document.getElementById('status').textContent]")
    if unsent:
        assert "not saved yet" in text, (unsent, text)
        assert "All answers saved" not in text, (unsent, text)
        assert re.search(rf"\b{unsent} (answer|change)", text), (unsent, text)
    else:
        assert "not saved yet" not in text, text


@pytest.mark.parametrize("delay", [0.0, 0.25], ids=["fast-server", "slow-server"])
def test_twenty_keys_25_ms_apart_store_exactly_twenty_answers(
    study_and_annotator, logged_in_page, live_server, slow_api, delay
):
    study, annotator = study_and_annotator
    page = logged_in_page(annotator)
    batches: list[int] = []  # answers per batch request
    page.on(
        "request",
        lambda r: (
            batches.append(len(r.post_data_json["answers"]))
            if r.method == "POST" and "/judgments/batch/" in r.url
            else None
        ),
    )
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    if delay:
        slow_api(delay)  # slowed after the first pair: the queue drains, keys wait for pairs
    keys = [("1", "2", "0")[i % 3] for i in range(20)]
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(25)
    status_is_truthful(page)
    wait_until(page, f"{UNSENT} === 0", timeout=30_000)
    wait_until(page, "document.querySelectorAll('#recent li.recent-saved').length === 10")
    status_is_truthful(page)
    assert page.inner_text("#status") == "All answers saved."
    assert page.inner_text("#answered") == "20"

    mine = list(PairJudgment.objects.filter(study=study, annotator=annotator).order_by("id"))
    assert [j.label for j in mine] == [LABEL_OF[k] for k in keys]  # sent in order
    assert len({(j.item_a_id, j.item_b_id) for j in mine}) == 20  # twenty different pairs
    assert page.console_errors == []
    if delay:  # behind a slow server the page sends its waiting answers in batches
        assert batches, "no batch request"
        assert max(batches) > 1


def test_closing_the_tab_with_unsent_answers_warns(
    study_and_annotator, logged_in_page, live_server
):
    study, annotator = study_and_annotator
    page = logged_in_page(annotator)
    page.route(
        re.compile(r"/api/studies/\d+/judgments/(\?.*)?$"),
        lambda route: (
            route.abort("internetdisconnected")
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    page.keyboard.press("1")
    page.wait_for_selector("#status >> text=retrying")
    status_is_truthful(page)
    assert "1 answer not saved yet" in page.inner_text("#status")
    with page.expect_event("dialog") as dialog:
        page.close(run_before_unload=True)
    assert dialog.value.type == "beforeunload"
    dialog.value.dismiss()  # stay on the page
    assert not page.is_closed()
    assert not PairJudgment.objects.filter(annotator=annotator).exists()
    # Back online, the kept answer is stored once and the page has nothing left to warn about
    # (the test also ends with no aborting route and no pending prompt for the context's close).
    page.unroute_all(behavior="ignoreErrors")
    page.evaluate("window.dispatchEvent(new Event('online'))")
    wait_until(page, f"{UNSENT} === 0", timeout=30_000)
    assert PairJudgment.objects.filter(annotator=annotator).count() == 1
    # The only errors are the browser's own lines for the POSTs the route cut.
    cut = "console: Failed to load resource: net::ERR_INTERNET_DISCONNECTED"
    assert set(page.console_errors) == {cut}


def test_an_earlier_answer_is_changed_by_a_click_and_help_opens_with_question_mark(
    study_and_annotator, logged_in_page, live_server
):
    study, annotator = study_and_annotator
    page = logged_in_page(annotator)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    displayed = []
    for n, key in enumerate(["1", "1", "1"], start=1):
        displayed.append((page.inner_text("#card-left .big"), page.inner_text("#card-right .big")))
        page.keyboard.press(key)
        wait_until(page, f"document.querySelectorAll('#recent li.recent-saved').length === {n}")
    # Listed as displayed (left · right), newest first.
    texts = page.locator("#recent li .pair-text").all_inner_texts()
    assert texts == [f"{left} · {right}" for left, right in reversed(displayed)]

    page.click("#recent li:nth-child(2) button.change")  # the second answer, not the last
    wait_until(page, "document.querySelectorAll('#recent li').length === 2")
    assert (page.inner_text("#card-left .big"), page.inner_text("#card-right .big")) == displayed[1]
    page.keyboard.press("2")
    wait_until(
        page, f"document.querySelectorAll('#recent li.recent-saved').length === 3 && {UNSENT} === 0"
    )
    left, right = displayed[1]
    changed = [
        j
        for j in PairJudgment.objects.filter(annotator=annotator).select_related("item_a", "item_b")
        if {j.item_a.key, j.item_b.key} == {left, right}
    ]
    assert [j.label for j in changed] == ["incomparable"]
    assert PairJudgment.objects.filter(annotator=annotator).count() == 3

    page.keyboard.press("?")
    page.wait_for_selector("#key-help[open]")
    assert "Backspace" in page.inner_text("#key-help")
    before = PairJudgment.objects.filter(annotator=annotator).count()
    page.keyboard.press("1")  # keys do not answer behind the help
    page.keyboard.press("Escape")
    page.wait_for_selector("#key-help:not([open])", state="attached")
    assert PairJudgment.objects.filter(annotator=annotator).count() == before
    assert page.evaluate(UNSENT) == 0
    assert page.console_errors == []


def test_keys_beyond_the_last_pair_are_refused_in_the_status_line(
    media_root, logged_in_page, live_server
):
    """Six items make 15 pairs: of 20 keys pressed 25 ms apart, 15 answer and 5 are refused,
    visibly; none is silently dropped."""
    study = make_study(space=make_space(name="tiny", n_words=0), name="Tiny", gold_rate=0.0)
    annotator = make_user("last", study=study, role=Membership.Role.ANNOTATOR)
    page = logged_in_page(annotator)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    for i in range(20):
        page.keyboard.press(("1", "2")[i % 2])
        page.wait_for_timeout(25)
    wait_until(page, f"{UNSENT} === 0", timeout=30_000)
    page.wait_for_selector("#card-left >> text=No more pairs")
    assert PairJudgment.objects.filter(annotator=annotator).count() == 15
    assert page.inner_text("#answered") == "15"
    assert "not used: there is no pair left" in page.inner_text("#status")
    assert page.console_errors == []


def test_s_skips_the_pair_and_c_leaves_a_comment_for_the_reviewers(
    study_and_annotator, logged_in_page, live_server
):
    study, annotator = study_and_annotator
    page = logged_in_page(annotator)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    skipped = sorted(
        int(page.get_attribute(f"#card-{side}", "data-item-id")) for side in ("left", "right")
    )
    page.keyboard.press("s")
    wait_until(page, f"{UNSENT} === 0")
    assert "Skipped" in page.inner_text("#status")
    shown_now = sorted(
        int(page.get_attribute(f"#card-{side}", "data-item-id")) for side in ("left", "right")
    )
    assert shown_now != skipped  # the next pair is on screen at once
    assert list(PairSkip.objects.values_list("item_a_id", "item_b_id")) == [tuple(skipped)]
    assert PairJudgment.objects.count() == 0  # a skip is not an answer

    page.keyboard.press("c")
    page.wait_for_selector("#comment-dialog[open]")
    page.keyboard.type("1 and 2 mean: a typo in one?")  # typing in the box answers nothing
    page.click("#comment-save")
    wait_until(page, f"{UNSENT} === 0")
    (comment,) = PairComment.objects.all()
    assert comment.text == "1 and 2 mean: a typo in one?"
    assert sorted((comment.item_a_id, comment.item_b_id)) == shown_now
    assert PairJudgment.objects.count() == 0
    page.keyboard.press("1")  # back on the page: keys answer again
    wait_until(page, f"{UNSENT} === 0")
    assert PairJudgment.objects.count() == 1


def test_reaching_the_target_opens_the_completion_page_once(
    media_root, logged_in_page, live_server
):
    """A next-pair GET still in flight when the last answer is saved also answers `complete`;
    the page must not start a second navigation to the completion page (it would abort the
    first: the flake seen in the team test under load). The GET and the completion page are
    held in the browser so that the GET's answer lands while the first navigation is pending."""
    study = make_study(
        space=make_space(name="once-space"),
        name="Once",
        target_per_annotator=3,
        stop_at_target=True,
    )
    annotator = make_user("once", study=study, role=Membership.Role.ANNOTATOR)
    page = logged_in_page(annotator)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    held_gets, done_loads = [], []
    page.route(re.compile(r"/next-pair/"), lambda route: held_gets.append(route))
    page.route(re.compile(r"/done/$"), lambda route: done_loads.append(route))
    for key in ("1", "2", "1"):
        page.keyboard.press(key)
        page.wait_for_timeout(50)
    deadline = time.monotonic() + 30
    while not done_loads and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert len(done_loads) == 1, "the completion page was never requested"
    assert held_gets, "no next-pair GET was in flight at the target"
    assert PairJudgment.objects.filter(annotator=annotator).count() == 3
    for route in held_gets:
        route.continue_()  # answers {"complete": true}: the annotator is at the target
    page.wait_for_timeout(1_000)
    assert len(done_loads) == 1, "a second navigation to the completion page"
    page.unroute(re.compile(r"/done/$"))
    done_loads[0].continue_()
    page.wait_for_url(re.compile(r"/done/$"))
    assert page.console_errors == []
