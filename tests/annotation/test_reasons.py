"""Reasons with answers: the fields that decided a comparable or incomparable answer, checked
against the pair's records (the fields they differ in, shown to annotators), stored with the
answer, in its single and batch paths."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest

from annotation.models import Membership, PairJudgment
from annotation.reasons import differing_fields
from spaces.models import Item
from spaces.records.create import record_space_create

from .factories import make_space, make_study, make_user

pytestmark = pytest.mark.django_db
Role = Membership.Role


@pytest.fixture
def people(media_root):
    frame = pd.DataFrame(
        {
            "id": ["p1", "p2", "p3", "p4"],
            "name": ["Ana", "Bo", "Chloé", "Dan"],
            "age": [25, 38, 52, 61],
            "sex": ["Female", "Male", "Female", "Male"],
            "income": ["<=50K", ">50K", ">50K", "<=50K"],
        }
    )
    return record_space_create(
        name="people",
        frame=frame,
        numeric=["age"],
        categorical=["sex"],
        excluded=["name"],
        label_column="income",
        key_column="id",
    )


@pytest.fixture
def study(people):
    return make_study(space=people, overlap=1, target_per_annotator=10)


@pytest.fixture
def annotator(study):
    return make_user("ann", study=study, role=Role.ANNOTATOR)


def ids(space, *keys):
    found = dict(Item.objects.filter(space=space, key__in=keys).values_list("key", "id"))
    return [found[k] for k in keys]


def answer(client, study, a, b, label, reasons=None, client_id=None, path="judgments/"):
    body = {"item_a": a, "item_b": b, "label": label, "client_id": client_id or str(uuid.uuid4())}
    if reasons is not None:
        body["reasons"] = reasons
    return client.post(f"/api/studies/{study.pk}/{path}", body, format="json")


def test_differing_fields_leave_out_the_key_and_compare_as_shown():
    left = {"key": "p1", "payload": {"id": "p1", "age": 30.0, "sex": "F", "x": None}}
    right = {"key": "p2", "payload": {"id": "p2", "age": 30, "sex": "M", "x": ""}}
    assert differing_fields(left, right) == ["sex"]  # 30.0 shows as 30; None as ""
    assert differing_fields({"key": "a", "payload": None}, {"key": "b", "payload": None}) == []


def test_an_incomparable_answer_keeps_its_reasons_and_a_retry_is_unchanged(
    study, people, annotator, client_for
):
    client = client_for(annotator)
    a, b = ids(people, "p1", "p2")  # differ in name, age, sex
    cid = str(uuid.uuid4())
    first = answer(client, study, a, b, "incomparable", ["sex", "age"], cid)
    assert first.status_code == 201, first.content
    assert first.json()["reasons"] == ["sex", "age"]
    again = answer(client, study, a, b, "incomparable", ["sex", "age"], cid)
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert PairJudgment.objects.get().reasons == ["sex", "age"]
    listed = client.get(f"/api/studies/{study.pk}/judgments/?mine=1").json()["results"]
    assert listed[0]["reasons"] == ["sex", "age"]


def test_a_served_pair_checks_reasons_against_its_records(study, annotator, client_for):
    client = client_for(annotator)
    pair = client.get(f"/api/studies/{study.pk}/next-pair/").json()
    left, right = pair["left"], pair["right"]
    differ = differing_fields(left, right)
    same = [f for f in left["payload"] if f not in differ and f != "id"]
    a, b = left["id"], right["id"]
    if same:
        refused = answer(client, study, a, b, "comparable", [same[0]])
        assert refused.status_code == 400
        assert "differ in" in refused.json()["detail"]
    stored = answer(client, study, a, b, "comparable", differ[:1])
    assert stored.status_code == 201
    assert stored.json()["reasons"] == differ[:1]


@pytest.mark.parametrize(
    ("label", "reasons", "message"),
    [
        ("unsure", ["age"], "comparable or incomparable"),
        ("incomparable", ["sex"], "'sex' is not one"),  # p1 and p3 are both Female
        ("incomparable", ["income"], "'income' is not one"),  # hidden from annotators
        ("incomparable", ["id"], "'id' is not one"),  # the key names each record
        ("incomparable", "age", "list"),
        ("incomparable", ["age", "age"], "once"),
        ("incomparable", ["age", ""], "reasons"),
        ("incomparable", ["a", "b", "c", "d", "e", "f"], "reasons"),
        ("incomparable", [7], "reasons"),
    ],
)
def test_bad_reasons_are_refused_and_nothing_is_stored(
    study, people, annotator, client_for, label, reasons, message
):
    a, b = ids(people, "p1", "p3")
    response = answer(client_for(annotator), study, a, b, label, reasons)
    assert response.status_code == 400, response.content
    assert message in response.content.decode()
    assert not PairJudgment.objects.exists()


def test_reasons_in_a_word_study_are_refused(db, media_root, client_for):
    space = make_space()
    study = make_study(space=space)
    user = make_user("w", study=study, role=Role.ANNOTATOR)
    a, b = space.items.order_by("row").values_list("id", flat=True)[:2]
    response = answer(client_for(user), study, a, b, "incomparable", ["x"])
    assert response.status_code == 400
    assert "have none" in response.json()["detail"]


def test_the_batch_path_settles_each_answers_reasons_on_its_own(
    study, people, annotator, client_for
):
    p1, p2, p3 = ids(people, "p1", "p2", "p3")
    good = {"item_a": p1, "item_b": p2, "label": "incomparable", "reasons": ["age"]}
    bad = {"item_a": p1, "item_b": p3, "label": "comparable", "reasons": ["sex"]}
    plain = {"item_a": p2, "item_b": p3, "label": "unsure"}
    body = {"answers": [{**x, "client_id": str(uuid.uuid4())} for x in (good, bad, plain)]}
    response = client_for(annotator).post(
        f"/api/studies/{study.pk}/judgments/batch/", body, format="json"
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created", "error", "created"]
    assert "'sex' is not one" in results[1]["detail"]
    assert results[0]["judgment"]["reasons"] == ["age"]
    assert results[2]["judgment"]["reasons"] == []
    assert sorted(PairJudgment.objects.values_list("label", flat=True)) == [
        "incomparable",
        "unsure",
    ]
