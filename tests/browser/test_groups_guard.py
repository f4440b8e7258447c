"""In real Chromium: the groups page keeps unsaved changes (or asks) before "New group", opening
another group or leaving the page, and an empty group cannot be saved."""

from __future__ import annotations

import pytest

from annotation.models import ComparableGroup, Membership
from tests.annotation.factories import make_space, make_study, make_user
from tests.browser.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_unsaved_changes_are_kept_or_confirmed_and_empty_groups_are_not_saved(
    media_root, logged_in_page, live_server
):
    study = make_study(space=make_space(name="guard-space"), name="Guard")
    curator = make_user("cura", study=study, role=Membership.Role.ANNOTATOR)
    page = logged_in_page(curator)
    page.goto(f"{live_server.url}/studies/{study.pk}/groups/")
    page.fill("#group-name", "names")
    assert page.is_disabled("#save")  # no members yet
    assert "at least one item" in page.inner_text("#save-note")

    page.fill("#search", "w001")
    page.wait_for_selector("#results li >> text=w001")
    page.press("#search", "Enter")
    wait_until(page, "document.getElementById('size').textContent === '1 item'")
    assert page.is_enabled("#save")

    # "New group" with unsaved changes asks; dismissing keeps them.
    asked = []

    def dismiss(dialog):
        asked.append((dialog.type, dialog.message))
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.click("#new-group")
    page.wait_for_selector("#status >> text=Kept your unsaved changes")
    assert asked[0][0] == "confirm"
    assert "unsaved changes" in asked[0][1]
    assert page.input_value("#group-name") == "names"
    assert page.inner_text("#size") == "1 item"

    # Leaving the page with unsaved changes asks too.
    with page.expect_event("dialog") as leaving:
        page.close(run_before_unload=True)
    assert leaving.value.type == "beforeunload"
    leaving.value.dismiss()
    assert not page.is_closed()

    # Accepting drops them: an empty new group, which cannot be saved.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#new-group")
    wait_until(page, "document.getElementById('size').textContent === '0 items'")
    assert page.input_value("#group-name") == ""
    assert page.is_disabled("#save")
    assert not ComparableGroup.objects.filter(study=study).exists()
    assert page.console_errors == []
