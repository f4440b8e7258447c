"""The WEAT test pages and API of a study: who may use them, preview and save through the form,
form errors, no WEAT for record and text studies."""

from __future__ import annotations

import pytest
from celery import current_app
from django.urls import reverse

from learning.models import WeatResult, WeatTest
from spaces.models import EmbeddingSpace

pytestmark = pytest.mark.django_db

POST = {
    "name": "Flowers / Pleasant",
    "kind": "unfair",
    "x_name": "Flowers",
    "x_words": "w0\nw1\ntulip",
    "y_name": "Insects",
    "y_words": "w2, w3",
    "a_name": "Pleasant",
    "a_words": "w4\nw5",
    "b_name": "Unpleasant",
    "b_words": "w6\nw7",
}


@pytest.fixture(autouse=True)
def sent(monkeypatch) -> list:
    messages = []
    monkeypatch.setattr(
        current_app, "send_task", lambda name, **options: messages.append((name, options["args"]))
    )
    return messages


def as_role(client, users, role):
    if role != "anonymous":
        client.force_login(users[role])
    return client


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("anonymous", 302),
        ("annotator", 403),
        ("reviewer", 403),
        ("outsider", 404),
        ("admin", 200),
        ("staff", 200),
    ],
)
def test_the_new_test_page_is_for_the_studys_admins(client, users, study, role, status):
    response = as_role(client, users, role).get(reverse("learning:study-weat-new", args=[study.pk]))
    assert response.status_code == status
    if status == 403:
        assert b"Only an admin of the study can define its WEAT tests." in response.content


def test_preview_lists_unknown_words_and_shows_both_metrics_then_save(
    client, users, study, versions, sent, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    url = reverse("learning:study-weat-new", args=[study.pk])
    page = client.post(url, {**POST, "action": "preview"}).content.decode()
    assert 'id="weat-preview"' in page
    assert 'data-metric="euclidean"' in page
    assert 'data-metric="current"' in page
    assert f"face-1 (#{versions[0].pk})" in page  # the published version
    assert "Not in the space, so not added" in page
    assert "tulip" in page
    assert "w0\nw1</textarea>" in page  # the form keeps only the words found
    assert not WeatTest.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {**POST, "action": "save"})
    assert response.status_code == 302
    assert response["Location"] == reverse("learning:study-weat", args=[study.pk])
    test = WeatTest.objects.get()
    assert test.x_words == ["w0", "w1"]
    assert test.suite.owner_study == study
    assert sent == [("learning.weat_test", [test.pk])]
    table = client.get(response["Location"]).content.decode()
    assert "Flowers / Pleasant" in table
    assert reverse("learning:study-weat-test-edit", args=[study.pk, test.pk]) in table
    assert "not added: tulip" in table  # the saved message says what was left out


def test_form_errors_name_the_set(client, users, study):
    client.force_login(users["admin"])
    url = reverse("learning:study-weat-new", args=[study.pk])
    page = client.post(url, {**POST, "y_words": "", "action": "save"}).content.decode()
    assert "Second target set (Y) is empty" in page
    page = client.post(url, {**POST, "a_words": "w0\nw5", "action": "save"}).content.decode()
    assert "“w0” is in two sets" in page
    page = client.post(url, {**POST, "b_words": "roach\ntoad", "action": "save"}).content.decode()
    assert (
        "Second attribute set (B) needs at least 1 word of the space (0 found; not in the "
        "space: roach, toad)" in page
    )
    assert not WeatTest.objects.exists()
    client.post(url, {**POST, "b_words": "roach\nw6", "action": "save"})  # one is enough for B
    assert WeatTest.objects.get().b_words == ["w6"]


def test_edit_and_delete(client, users, study, versions):
    client.force_login(users["admin"])
    client.post(reverse("learning:study-weat-new", args=[study.pk]), {**POST, "action": "save"})
    test = WeatTest.objects.get()
    edit = reverse("learning:study-weat-test-edit", args=[study.pk, test.pk])
    assert "w0\nw1</textarea>" in client.get(edit).content.decode()
    client.post(edit, {**POST, "name": "Renamed", "action": "save"})
    test.refresh_from_db()
    assert test.name == "Renamed"
    detail = client.get(reverse("learning:study-weat-test", args=[study.pk, test.pk]))
    assert edit in detail.content.decode()
    client.force_login(users["reviewer"])
    delete = reverse("learning:study-weat-test-delete", args=[study.pk, test.pk])
    assert client.post(delete).status_code == 403
    assert client.get(delete).status_code == 405
    client.force_login(users["admin"])
    assert client.post(delete).status_code == 302
    assert not WeatTest.objects.exists()


def test_shared_suites_tests_are_not_changed_on_the_page(client, users, study, weat):
    client.force_login(users["admin"])
    edit = reverse("learning:study-weat-test-edit", args=[study.pk, weat[0].pk])
    assert client.get(edit).status_code == 404
    table = client.get(reverse("learning:study-weat", args=[study.pk])).content.decode()
    assert "change</a>" not in table
    assert 'id="weat-new"' in table


@pytest.mark.parametrize("kind", ["records", "texts"])
def test_record_and_text_studies_have_no_weat_tab_or_pages(client, users, study, kind):
    EmbeddingSpace.objects.filter(pk=study.space_id).update(kind=kind)
    client.force_login(users["admin"])
    for name in ["learning:study-weat", "learning:study-weat-new"]:
        response = client.get(reverse(name, args=[study.pk]))
        assert response.status_code == 404
        assert b"WEAT compares sets of words" in response.content
    for page in [
        reverse("annotation:study-detail", args=[study.pk]),
        reverse("learning:study-drift", args=[study.pk]),
        reverse("home"),
    ]:
        assert (
            reverse("learning:study-weat", args=[study.pk]) not in client.get(page).content.decode()
        )


def test_word_studies_keep_their_weat_tab(client, users, study):
    client.force_login(users["admin"])
    weat_url = reverse("learning:study-weat", args=[study.pk])
    for page in [reverse("annotation:study-detail", args=[study.pk]), reverse("home")]:
        assert weat_url in client.get(page).content.decode()


# --- the API ---------------------------------------------------------------------------------

BODY = {
    "name": "Flowers / Pleasant",
    "kind": "meaningful",
    "x_words": ["w0", "w1", "tulip"],
    "y_words": ["w2", "w3"],
    "a_words": ["w4"],
    "b_words": ["w6", "w7"],
}


def test_the_api_creates_lists_and_deletes(
    client, users, study, sent, django_capture_on_commit_callbacks
):
    url = reverse("api-weat-tests", args=[study.pk])
    client.force_login(users["reviewer"])
    assert client.post(url, BODY, content_type="application/json").status_code == 403
    client.force_login(users["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, BODY, content_type="application/json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["unknown_words"] == {"x_words": ["tulip"]}
    assert data["x_words"] == ["w0", "w1"]
    assert data["editable"] is True
    assert (data["x_name"], data["a_name"]) == ("X", "A")
    assert sent == [("learning.weat_test", [data["id"]])]
    client.force_login(users["reviewer"])
    listed = client.get(url).json()
    assert [t["name"] for t in listed] == ["Flowers / Pleasant"]
    one = reverse("api-weat-test", args=[study.pk, data["id"]])
    assert client.get(one).json()["id"] == data["id"]
    assert client.delete(one).status_code == 403
    client.force_login(users["admin"])
    assert client.delete(one).status_code == 204
    assert client.get(one).status_code == 404
    assert not WeatResult.objects.exists()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"y_words": ["w2"]}, "needs at least 2 words"),
        ({"a_words": ["w0"]}, "is in two sets"),
        ({"kind": "odd"}, "kind"),
        ({"x_words": "w0"}, "x_words"),
    ],
)
def test_the_api_refuses_bad_tests_writing_nothing(client, users, study, change, says):
    client.force_login(users["admin"])
    url = reverse("api-weat-tests", args=[study.pk])
    response = client.post(url, {**BODY, **change}, content_type="application/json")
    assert response.status_code == 400
    assert says in response.content.decode()
    assert not WeatTest.objects.exists()
