"""Races that answered 500 in the attack of issue #39 (item 6), now through the one conflict rule
(``common/errors.py``: ``duplicate_as_conflict``, ``locked_or_gone``): requests released together
against a live server on PostgreSQL (the helpers of ``test_limits_concurrency``), or two
connections interleaved where a live server cannot time the race.

Before the fix: 30 deletes of one space → ~11 × 500 (``DoesNotExist``); a space attached to a study
while it is deleted → 500 (a foreign key refused at the commit); 30 WEAT test creates with one
name → ~5 × 500 and two renames to one name → 500 (unique violations).
"""
# ruff: noqa: F811 - the live server's fixtures are imported from test_limits_concurrency

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from accounts.tokens import api_token_create
from annotation.models import Membership
from annotation.setup.forms import StudyForm
from annotation.setup.studies import study_save
from common.errors import Conflict
from learning.evaluation.weat_tests import weat_draft, weat_test_save
from learning.models import WeatTest
from spaces.models import EmbeddingSpace
from tests.annotation.factories import make_space, make_study, make_user
from tests.conftest import require
from tests.security.test_limits_concurrency import (  # noqa: F401 - fixtures: server, space
    N,
    _all_at_once,
    _form,
    _request,
    server,
    space,
)

pytestmark = pytest.mark.django_db(transaction=True)
WORDS = {
    "x_words": ["w000", "w001", "w002"],
    "y_words": ["w003", "w004", "w005"],
    "a_words": ["w006", "w007"],
    "b_words": ["w008", "w009"],
}
NAMES = {"x_name": "X", "y_name": "Y", "a_name": "A", "b_name": "B"}


@pytest.fixture
def postgres():
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")


def session_cookie(user, settings) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def test_thirty_simultaneous_deletes_of_one_space_delete_it_once(
    server, postgres, media_root, settings
):
    owner = make_user("owner")
    doomed = make_space(name="doomed", n_words=20)
    EmbeddingSpace.objects.filter(pk=doomed.pk).update(owner=owner)
    url = server.url + reverse("spaces:delete", args=[doomed.pk])
    cookie = session_cookie(owner, settings)
    statuses = _all_at_once(lambda i: _request(url, *_form({}, cookie)))
    assert not EmbeddingSpace.objects.filter(pk=doomed.pk).exists()
    assert statuses.count(200) == 1, statuses  # deleted (the redirect followed)
    assert statuses.count(404) == N - 1, statuses  # gone already: no 500


def test_a_space_attached_while_it_is_deleted_is_a_conflict(postgres, space, media_root):
    """The delete holds the space's row (as ``space_delete`` does) while a study is moved onto
    it; the move waits for the delete's commit, then finds the space gone: 409, the study on its
    old space. Before, the move wrote the study and its commit failed on the foreign key."""
    staff = make_user("lead", is_staff=True)
    study = make_study(space=space, name="Moving")
    doomed = make_space(name="doomed", n_words=20)
    form = StudyForm(
        data={
            "name": "Moving",
            "space": doomed.pk,
            "mode": study.mode,
            "pool": "all",
            "strategy": study.strategy,
            "overlap": 2,
            "gold_rate": 0,
            "target_per_annotator": 20,
        },
        instance=study,
        user=staff,
    )
    assert form.is_valid(), form.errors  # the space exists when the form is checked
    locked, release, outcome = threading.Event(), threading.Event(), {}

    def delete_space():
        try:
            with transaction.atomic():
                EmbeddingSpace.objects.select_for_update().get(pk=doomed.pk).delete()
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    def move_study():
        try:
            study_save(user=staff, data=dict(form.cleaned_data), study=study)
            outcome["saved"] = True
        except Exception as error:  # noqa: BLE001 - the test reports which
            outcome["error"] = error
        finally:
            connection.close()

    deleter = threading.Thread(target=delete_space)
    deleter.start()
    assert locked.wait(10)
    mover = threading.Thread(target=move_study)
    mover.start()
    mover.join(1.0)  # it waits on the delete's lock...
    release.set()  # ...which commits now
    deleter.join(10)
    mover.join(10)
    assert isinstance(outcome.get("error"), Conflict), outcome
    assert "was deleted meanwhile" in outcome["error"].message
    study.refresh_from_db()
    assert study.space_id == space.pk


def _api_post(url: str, key: str, body: dict) -> int:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def weat_admin(server, postgres, space):
    study = make_study(space=space, name="Words")
    admin = make_user("boss", study=study, role=Membership.Role.ADMIN)
    return study, admin


def test_thirty_simultaneous_weat_test_creates_with_one_name_make_one(server, weat_admin):
    study, admin = weat_admin
    _, key = api_token_create(user=admin, name="attack")
    url = server.url + reverse("api-weat-tests", args=[study.pk])
    body = {"name": "One name", "kind": "meaningful", **NAMES, **WORDS}
    statuses = _all_at_once(lambda i: _api_post(url, key, body))
    assert WeatTest.objects.filter(name="One name").count() == 1
    assert statuses.count(201) == 1, statuses
    assert set(statuses) <= {201, 400, 409}, statuses  # 400: the name check saw the winner


def test_thirty_simultaneous_renames_to_one_name_rename_one(server, weat_admin, settings):
    study, admin = weat_admin
    cookie = session_cookie(admin, settings)
    for i in range(N):
        draft = weat_draft(
            study=study, name=f"test {i}", kind="meaningful", names=NAMES, words=WORDS
        )
        weat_test_save(user=admin, study=study, draft=draft)
    tests = list(WeatTest.objects.order_by("pk"))
    fields = {
        "action": "save",
        "name": "Renamed",
        "kind": "meaningful",
        **NAMES,
        **{s: "\n".join(ws) for s, ws in WORDS.items()},
    }

    def rename(i):
        url = server.url + reverse("learning:study-weat-test-edit", args=[study.pk, tests[i].pk])
        return _request(url, *_form(fields, cookie))

    statuses = _all_at_once(rename)
    assert WeatTest.objects.filter(name="Renamed").count() == 1
    assert statuses.count(200) == 1, statuses  # saved (the redirect followed)
    assert set(statuses) <= {200, 400, 409}, statuses
