"""Columns hidden from annotators (by default a record space's label column) never reach them:
not in any item the annotation API returns, not findable by the record search."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest

from annotation.groups.selectors import item_search
from annotation.models import Membership
from spaces.models import EmbeddingSpace, Item
from spaces.records.columns import record_columns
from spaces.records.create import record_space_create

from .factories import make_space, make_study, make_user

pytestmark = pytest.mark.django_db

Role = Membership.Role
FIELDS = {"id", "name", "age", "sex"}  # the columns shown; "income" (the label) is hidden


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
        excluded=["name"],  # out of φ, yet shown
        label_column="income",
        key_column="id",
    )


@pytest.fixture
def study(people):
    return make_study(space=people, overlap=1, target_per_annotator=10)


@pytest.fixture
def annotator(study):
    return make_user("ann", study=study, role=Role.ANNOTATOR)


def api(study, tail=""):
    return f"/api/studies/{study.pk}/{tail}"


def test_the_label_column_is_hidden_by_default_and_kept_in_the_record(people):
    assert people.hidden_columns == ["income"]
    item = Item.objects.get(space=people, key="p2")
    assert item.payload["income"] == ">50K"  # stored whole (admins, exports of φ)
    assert item.shown_payload == {"id": "p2", "name": "Bo", "age": 38, "sex": "Male"}


def test_items_the_annotator_is_served_leave_the_hidden_field_out(study, annotator, client_for):
    client = client_for(annotator)
    pair = client.get(api(study, "next-pair/")).json()
    assert set(pair["left"]["payload"]) == FIELDS
    assert set(pair["right"]["payload"]) == FIELDS
    body = {
        "item_a": pair["left"]["id"],
        "item_b": pair["right"]["id"],
        "label": "comparable",
        "client_id": str(uuid.uuid4()),
    }
    answer = client.post(api(study, "judgments/?next=1"), body, format="json").json()
    for item in (answer["item_a"], answer["item_b"], answer["next_pair"]["left"]):
        assert set(item["payload"]) == FIELDS
    listed = client.get(api(study, "judgments/")).json()["results"]
    assert set(listed[0]["item_a"]["payload"]) == FIELDS
    following = answer["next_pair"]
    again = dict(body, item_a=following["left"]["id"], item_b=following["right"]["id"])
    batch = client.post(
        api(study, "judgments/batch/?next=2"),
        {"answers": [dict(again, client_id=str(uuid.uuid4()))]},
        format="json",
    ).json()
    assert batch["results"][0]["status"] == "created"
    assert set(batch["results"][0]["judgment"]["item_b"]["payload"]) == FIELDS
    assert all(set(p["left"]["payload"]) == FIELDS for p in batch["next_pairs"])


def test_group_members_and_suggestions_leave_the_hidden_field_out(study, annotator, client_for):
    client = client_for(annotator)
    ids = list(Item.objects.filter(space=study.space).values_list("id", flat=True))
    created = client.post(api(study, "groups/"), {"name": "g", "members": ids[:2]}, format="json")
    group = client.get(api(study, f"groups/{created.json()['id']}/")).json()
    assert [set(m["payload"]) for m in group["members"]] == [FIELDS, FIELDS]
    suggested = client.get(api(study, f"suggestions/?members={ids[0]},{ids[1]}&k=2")).json()
    assert suggested["nearest_euclid"]
    assert all(set(m["payload"]) == FIELDS for m in suggested["nearest_euclid"])


def test_annotators_cannot_find_records_by_a_hidden_field(study, annotator, client_for):
    client = client_for(annotator)

    def found(q):
        response = client.get("/api/items/", {"study": study.pk, "q": q})
        assert response.status_code == 200
        assert all(set(i["payload"]) == FIELDS for i in response.json())
        return [i["key"] for i in response.json()]

    assert found(">50K") == []
    assert found("income:>50K") == []
    assert found("50k") == []
    # the shown fields are searched as before, the one-field form too
    assert found("chloé") == ["p3"]
    assert found("52") == ["p3"]
    assert found("sex:female") == ["p1", "p3"]
    assert found("name:bo") == ["p2"]
    # by space rather than study, the same
    response = client.get("/api/items/", {"space": study.space_id, "q": ">50K"})
    assert response.json() == []


def test_a_space_hiding_nothing_searches_every_field(people):
    EmbeddingSpace.objects.filter(pk=people.pk).update(hidden_columns=[])
    assert [i.key for i in item_search(space_id=people.pk, query=">50K")] == ["p2", "p3"]
    assert [i.key for i in item_search(space_id=people.pk, query="income:>50")] == ["p2", "p3"]


# --- changing the shown columns after the space exists -------------------------------------


def test_a_column_hidden_later_leaves_the_next_pair_even_from_a_filled_queue(
    study, annotator, client_for
):
    """The pair queue holds the items as shown when it was filled; hiding a column saves the
    space, which forgets its studies' facts, so the queue is chosen again."""
    from spaces.records.columns import record_hidden_columns_set

    client = client_for(annotator)
    assert set(client.get(api(study, "next-pair/")).json()["left"]["payload"]) == FIELDS
    assert record_hidden_columns_set(study.space, ["sex", "income"]) == ["sex", "income"]
    pair = client.get(api(study, "next-pair/")).json()
    assert set(pair["left"]["payload"]) == FIELDS - {"sex"}
    assert set(pair["right"]["payload"]) == FIELDS - {"sex"}
    assert Item.objects.get(space=study.space, key="p1").payload["sex"] == "Female"  # kept
    assert [i.key for i in item_search(space_id=study.space_id, query="sex:female")] == []
    # shown again: back in the items and in the search
    record_hidden_columns_set(study.space, ["income"])
    assert set(client.get(api(study, "next-pair/")).json()["left"]["payload"]) == FIELDS
    assert [i.key for i in item_search(space_id=study.space_id, query="sex:female")] == ["p1", "p3"]


@pytest.mark.parametrize(
    ("hidden", "message"),
    [(["salary"], "no column 'salary' to hide"), ("income", "a list of column names")],
)
def test_hiding_a_column_the_table_lacks_is_refused_and_changes_nothing(people, hidden, message):
    from spaces.exceptions import EmbeddingFormatError
    from spaces.records.columns import record_hidden_columns_set

    with pytest.raises(EmbeddingFormatError, match=message):
        record_hidden_columns_set(people, hidden)
    people.refresh_from_db()
    assert people.hidden_columns == ["income"]


def test_the_shown_columns_page_changes_them_for_staff_only(people, study, annotator, client_for):
    page = f"/spaces/{people.pk}/shown/"
    staff = make_user("boss", is_staff=True)
    assert client_for(annotator).get(page).status_code in (403, 404)
    client = client_for(staff)
    html = client.get(page).content.decode()
    assert 'data-shown="income"' in html
    assert 'data-column="name"' in html
    # φ's columns first (age, sex), then the excluded (name, income), then the rest (id)
    columns = record_columns(people)
    assert columns == ["age", "sex", "name", "income", "id"]
    shown = {f"shown_{columns.index(c)}": "on" for c in ("id", "name", "age")}  # sex too hidden
    response = client.post(page, shown)
    assert response.status_code == 302
    assert response["Location"] == page
    people.refresh_from_db()
    assert people.hidden_columns == ["sex", "income"]
    assert "now see the checked columns" in client.get(page).content.decode()
    listed = client.get("/spaces/").content.decode()
    assert f'href="{page}"' in listed
    # not a record space: no such page
    words = make_space(name="words", n_words=4, dimension=2)
    assert client.get(f"/spaces/{words.pk}/shown/").status_code == 404
