"""What a new team does, in real Chromium, with no Django admin and no shell: an admin uploads a
small space, creates a study on it, uploads 50 item keys and 10 gold pairs, invites two
annotators and a reviewer (their links set passwords); both annotators label until the target
and see the completion page; the reviewer sees their agreement; the admin publishes the metric a
real worker fitted and downloads the judgments and Sigma from the pages — the downloaded Sigma
equals the API's."""

from __future__ import annotations

import io
import re
import time

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import GoldPair, Membership, PairJudgment, Study
from learning.models import MetricVersion, StudyLearningSettings
from tests.annotation.factories import PASSWORD
from tests.browser.conftest import collect_errors, wait_until
from tests.browser.test_space_upload_page import glove_file
from tests.celery_support import app_pointed_at, worker_database_url

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow]

TARGET = 12
KEYS = [f"w{i}" for i in range(50)]
GOLD = [
    (f"w{i}", f"w{i + 1}", "comparable" if i % 4 == 0 else "incomparable") for i in range(0, 20, 2)
]


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_user("boss", password=PASSWORD, is_staff=True)


@pytest.fixture
def media(media_root):
    return media_root


def invite(page, username: str, role: str, email: str = "") -> str:
    page.fill("#id_invite-username", username)
    page.fill("#id_invite-email", email)
    page.select_option("#id_invite-role", role)
    page.click("#member-invite button[type=submit]")
    page.wait_for_selector("#invitation-link")
    return page.input_value("#invitation-link")


def accept(browser, link: str, password: str):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.console_errors = collect_errors(page)
    page.goto(link)
    page.fill("input[name=new_password1]", password)
    page.fill("input[name=new_password2]", password)
    page.click("#set-password button[type=submit]")
    page.wait_for_url(re.compile(r"/studies/$"))
    return page


def label_until_done(page, study_name: str) -> int:
    page.click(f"text={study_name}")
    page.click("text=Label pairs")
    answered = 0
    while "/done/" not in page.url:
        page.wait_for_selector("#card-left[data-item-id]")
        pair = [page.get_attribute(f"#card-{side}", "data-item-id") for side in ("left", "right")]
        page.keyboard.press("1" if answered % 2 == 0 else "2")
        answered += 1
        assert answered <= TARGET, "labelled past the target"
        if answered == TARGET:
            page.wait_for_url(re.compile(r"/done/$"))
            break
        wait_until(
            page,
            "([a, b]) => { const l = document.getElementById('card-left').dataset.itemId;"
            " const r = document.getElementById('card-right').dataset.itemId;"
            " return l && r && (l !== a || r !== b); }",
            arg=pair,
        )
    return answered


def download(page, selector: str) -> bytes:
    with page.expect_download() as info:
        page.click(selector)
    path = info.value.path()
    with open(path, "rb") as handle:
        return handle.read()


def test_a_new_team_goes_from_an_empty_install_to_a_published_metric_in_the_browser(
    admin,
    media,
    tmp_path,
    private_redis,
    start_worker,
    browser,
    logged_in_page,
    live_server,
    screenshot,
    mailoutbox,
):
    start_worker(
        queue="celery",
        DATABASE_URL=worker_database_url(),
        MEDIA_ROOT=str(media),
        REDIS_URL=private_redis.url,
        CELERY_BROKER_URL=None,
        CELERY_RESULT_BACKEND=None,
        LEARNING_DEBOUNCE_SECONDS="1",
    )
    with app_pointed_at(private_redis.url):
        page = logged_in_page(admin)
        # 1. A small space.
        page.click("text=Spaces")
        page.click("text=Upload an embedding file")
        page.set_input_files("input[name=file]", str(glove_file(tmp_path / "v.txt", n=80)))
        page.fill("input[name=name]", "team space")
        page.click("#upload-form button[type=submit]")
        wait_until(
            page,
            "document.getElementById('import-status').dataset.status === 'done'",
            timeout=60_000,
        )

        # 2. A study on it.
        page.click("header nav >> text=Studies")
        page.click("#new-study")
        page.fill("#id_name", "Team study")
        page.fill("#id_instructions", "Are these **alike**?")
        wait_until(
            page,
            "document.getElementById('instructions-preview').innerHTML.includes('<strong>alike')",
        )
        page.select_option("#id_mode", "pairs")
        page.select_option("#id_space", label="team space")
        page.select_option("#id_pool", "all")
        page.fill("#id_overlap", "2")
        page.fill("#id_gold_rate", "0.2")
        page.fill("#id_target_per_annotator", str(TARGET))
        page.check("#id_stop_at_target")
        page.click("#save-study")
        page.wait_for_selector("text=created")
        study = Study.objects.get(name="Team study")
        # Not a step of the team's: the refit gate (a new version per 10 new answers or 5
        # minutes) set to every answer, so that the test does not depend on when refits ran.
        StudyLearningSettings.objects.update_or_create(
            study=study, defaults={"version_min_new_answers": 1}
        )

        # 3. 50 item keys and 10 gold pairs.
        page.click("nav.subnav >> text=Items")
        page.fill("#id_text", "\n".join(KEYS))
        page.click("#items-upload button[type=submit]")
        page.wait_for_selector("text=the pool has 50 items")
        page.click("nav.subnav >> text=Gold pairs")
        page.fill("#id_text", "key_a,key_b,label\n" + "\n".join(",".join(g) for g in GOLD))
        page.click("#gold-upload button[type=submit]")
        page.wait_for_selector("#gold-preview")
        assert page.locator("#gold-preview tbody tr").count() == 10
        page.click("#gold-confirm")
        page.wait_for_selector("text=10 gold pairs added")
        assert GoldPair.objects.filter(study=study).count() == 10

        # 4. Invitations.
        page.click("nav.subnav >> text=Members")
        link_1 = invite(page, "ann1", "annotator", "ann1@example.org")
        link_2 = invite(page, "ann2", "annotator")
        link_r = invite(page, "rev", "reviewer")
        assert len(mailoutbox) == 1
        assert link_1 in mailoutbox[0].body
        screenshot(page, "team-members")

        # 5. Both annotators label until the target and see the completion page.
        for name, link in (("ann1", link_1), ("ann2", link_2)):
            annotator = accept(browser, link, f"{name}-secret-pass-42")
            assert label_until_done(annotator, "Team study") == TARGET
            assert "Thank you" in annotator.inner_text("#study-done")
            screenshot(annotator, f"team-done-{name}")
            annotator.goto(f"{live_server.url}/studies/{study.pk}/")
            assert f"{TARGET + 1} of" not in annotator.content()
            assert annotator.console_errors == []
            annotator.context.close()
        for name in ("ann1", "ann2"):
            count = PairJudgment.objects.filter(study=study, annotator__username=name).count()
            assert count == TARGET

        # 6. The reviewer sees their agreement.
        reviewer = accept(browser, link_r, "rev-secret-pass-42")
        reviewer.click("text=Team study")
        reviewer.click("text=Dashboard")
        reviewer.wait_for_selector("#kappas", timeout=60_000)
        kappas = reviewer.inner_text("#kappas")
        assert "ann1" in kappas
        assert "ann2" in kappas
        reviewer.context.close()

        # 7. The worker's EXPLORE version, published on its page; downloads from the pages.
        deadline = time.monotonic() + 120
        version = None
        while version is None and time.monotonic() < deadline:
            version = MetricVersion.objects.filter(
                study=study, method="explore", status=MetricVersion.Status.READY
            ).first()
            time.sleep(0.5)
        assert version is not None, list(
            MetricVersion.objects.filter(study=study).values_list("method", "status", "error")
        )
        page.goto(f"{live_server.url}{reverse('learning:version-detail', args=[version.pk])}")
        if page.locator("#publish").count():
            page.click("#publish-open")  # Publish asks first, saying what users receive
            if page.locator("#publish-reason").count():  # a verdict that is not informative
                page.fill("#publish-reason", "an end-to-end test of the team's study")
            page.click("#publish")
            page.wait_for_selector("text=is now the published")
        version.refresh_from_db()
        assert version.is_published
        sigma_page = np.load(io.BytesIO(download(page, "text=Download Sigma (.npy)")))
        api = page.request.get(
            live_server.url + reverse("api-published-sigma", args=[study.pk, "explore", "npy"])
        )
        assert api.status == 200
        assert np.array_equal(sigma_page, np.load(io.BytesIO(api.body())))

        page.goto(f"{live_server.url}/studies/{study.pk}/")
        judgments = download(page, "#exports >> text=CSV >> nth=0").decode()
        assert len(judgments.strip().splitlines()) == 1 + 2 * TARGET
        screenshot(page, "team-study-page")
        assert page.console_errors == []
    # The two annotators, the reviewer, and the admin who created the study (its admin member).
    roles = sorted(Membership.objects.filter(study=study).values_list("role", flat=True))
    assert roles == ["admin", "annotator", "annotator", "reviewer"]
