"""The set-up API (``annotation/setup/api.py``): a study created, set up and staffed over JSON,
through the services the pages use — and bad input refused with its reason, nothing written."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import CandidatePair, GoldPair, Membership, Study
from annotation.selectors import pool_items
from audit.models import AuditEvent

from .factories import make_space, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def space(media_root):
    return make_space(name="words")


@pytest.fixture
def staff():
    user = make_user("lead", is_staff=True)
    _, key = api_token_create(user=user, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")  # a token, as a CI job would
    return client


def created(staff, space, **extra) -> dict:
    body = {"name": "Via the API", "space": space.pk, "mode": "pairs"} | extra
    response = staff.post(reverse("api-studies"), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_whole_set_up_over_the_api(staff, space):
    study = created(staff, space)
    assert study["role"] == "admin"
    assert (study["target_per_annotator"], study["overlap"], study["strategy"]) == (
        100,
        2,
        "random",
    )  # the page's defaults
    row = Study.objects.get(pk=study["id"])
    assert row.pool == Study.Pool.ALL
    assert Membership.objects.get(study=row).user.username == "lead"  # the caller: its admin
    assert AuditEvent.objects.filter(action="study.create", study_id=row.pk).count() == 1

    url = lambda name: reverse(name, args=[row.pk])  # noqa: E731
    answer = staff.patch(
        url("api-study"), {"target_per_annotator": 30, "overlap": 3}, format="json"
    )
    assert answer.status_code == 200
    assert (answer.json()["target_per_annotator"], answer.json()["overlap"]) == (30, 3)

    keys = [f"w{i:03d}" for i in range(20)]
    answer = staff.post(url("api-study-pool"), {"keys": keys}, format="json")
    assert answer.json() == {"keys": 20, "added": 20, "pool": 20}
    row.refresh_from_db()
    assert pool_items(study=row).count() == 20

    answer = staff.post(
        url("api-study-candidate-pairs"), {"pairs": [["w000", "w001"]]}, format="json"
    )
    assert answer.status_code == 200
    assert CandidatePair.objects.filter(study=row).count() == 1
    gold = {"pairs": [["w002", "w003", "comparable"], ["w004", "w005", "Incomparable"]]}
    assert staff.post(url("api-study-gold-pairs"), gold, format="json").status_code == 200
    assert sorted(GoldPair.objects.filter(study=row).values_list("label", flat=True)) == [
        "comparable",
        "incomparable",
    ]

    make_user("ann")
    answer = staff.post(url("api-study-members"), {"user": "ann"}, format="json")
    assert answer.status_code == 201
    assert answer.json()["role"] == "annotator"
    answer = staff.post(
        url("api-study-members"), {"username": "newbie", "role": "reviewer"}, format="json"
    )
    assert answer.status_code == 201
    assert "/accounts/invitation/" in answer.json()["invitation"]
    roles = dict(Membership.objects.filter(study=row).values_list("user__username", "role"))
    assert roles == {"lead": "admin", "ann": "annotator", "newbie": "reviewer"}


def test_only_staff_create_and_only_admins_set_up(staff, space):
    study = created(staff, space)
    ann = make_user("ann")
    client = APIClient()
    client.force_login(ann)
    body = {"name": "mine", "space": space.pk, "mode": "pairs"}
    assert client.post(reverse("api-studies"), body, format="json").status_code == 403
    Membership.objects.create(study_id=study["id"], user=ann, role="reviewer")
    patch = client.patch(reverse("api-study", args=[study["id"]]), {"overlap": 1}, format="json")
    assert patch.status_code == 403
    assert Study.objects.get(pk=study["id"]).overlap == 2


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"space": 1}, 400, "name"),
        ({"name": "x"}, 400, "space"),
        ({"name": "x", "space": 999_999}, 400, "Select a valid choice"),
        ({"name": "x", "space": "SPACE", "mode": "sometimes"}, 400, "not a valid choice"),
        ({"name": "x", "space": "SPACE", "overlap": 0}, 400, "Overlap k is between 1 and"),
        ({"name": "x", "space": "SPACE", "gold_rate": 2}, 400, "between 0 and 1"),
        ({"name": "x", "space": "SPACE", "pool": "tags"}, 400, "Choose at least one tag"),
        ({"name": "a\x00b", "space": "SPACE"}, 400, "NUL"),
        ({"name": "Via the API", "space": "SPACE"}, 409, "already exists"),
    ],
)
def test_bad_studies_are_refused_and_nothing_is_written(staff, space, body, status, message):
    created(staff, space)
    before = Study.objects.count()
    body = {k: (space.pk if v == "SPACE" else v) for k, v in body.items()}
    answer = staff.post(reverse("api-studies"), body, format="json")
    assert answer.status_code == status
    assert message in answer.content.decode()
    assert Study.objects.count() == before


def test_bad_set_up_lists_are_refused_and_nothing_is_written(staff, space):
    row = Study.objects.get(pk=created(staff, space)["id"])
    url = lambda name: reverse(name, args=[row.pk])  # noqa: E731
    answer = staff.post(url("api-study-pool"), {"keys": ["w000", "nope", "nor"]}, format="json")
    assert answer.status_code == 400
    assert "2 unknown key(s)" in answer.json()["detail"]
    assert row.pool_keys.count() == 0
    bad_pairs = [
        {"pairs": [["w000"]]},
        {"pairs": [["w000", "w001", "comparable"]]},
        {"pairs": []},
        {"pairs": [["w000", "zzz"]]},
    ]
    for body in bad_pairs:
        assert staff.post(url("api-study-candidate-pairs"), body, format="json").status_code == 400
    assert not CandidatePair.objects.filter(study=row).exists()
    for body in [{"pairs": [["w000", "w001"]]}, {"pairs": [["w000", "w001", "maybe"]]}]:
        assert staff.post(url("api-study-gold-pairs"), body, format="json").status_code == 400
    assert not GoldPair.objects.filter(study=row).exists()
    assert staff.post(url("api-study-members"), {}, format="json").status_code == 400
    answer = staff.post(url("api-study-members"), {"user": "nobody-here"}, format="json")
    assert answer.status_code == 400
    assert "invite them instead" in answer.json()["detail"]
    answer = staff.post(url("api-study-members"), {"user": "lead"}, format="json")
    assert answer.status_code == 409
    assert Membership.objects.filter(study=row).count() == 1
