"""The data browser of a study's space (``spaces.search`` and ``annotation/setup/browse.py``):
the search rule term by term on a record space, what reviewers and admins see, the pool made
from a filter, one item opened, and bad filters refused with a message."""

from __future__ import annotations

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import CandidatePair, Membership, Study
from annotation.selectors import pool_items
from annotation.setup.pool import pool_upload
from audit.models import AuditEvent
from common.errors import InvalidInput
from spaces.models import Item, Tag
from spaces.records.create import record_space_create
from spaces.search import items_matching

from .factories import make_study, make_user

pytestmark = pytest.mark.django_db
Role = Membership.Role


@pytest.fixture
def credit(media_root):
    """Eight applicants: purpose, age (numbers), sex, and the outcome (hidden from annotators)."""
    frame = pd.DataFrame(
        {
            "id": [f"a{i}" for i in range(1, 9)],
            "purpose": [
                "car",
                "radio/tv",
                "car",
                "business",
                "radio/tv",
                "car",
                "education",
                "car",
            ],
            "age": [22, 35, 41, 67, 29, 53, 19, 40],
            "sex": ["female", "male", "male", "female", "female", "male", "male", "female"],
            "credit": ["good", "bad", "good", "good", "bad", "good", "bad", "good"],
        }
    )
    space = record_space_create(
        name="credit",
        frame=frame,
        numeric=["age"],
        categorical=["purpose", "sex"],
        label_column="credit",
        key_column="id",
    )
    tag = Tag.objects.create(name="checked")
    tag.items.add(*Item.objects.filter(space=space, key__in=["a1", "a4"]))
    return space


def keys(space, query, **kw) -> list[str]:
    found = items_matching(space_id=space.pk, query=query, **kw).order_by("row")
    return list(found.values_list("key", flat=True))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"]),
        ("purpose:car", ["a1", "a3", "a6", "a8"]),
        ("purpose:car sex:female", ["a1", "a8"]),  # every term must match
        ("age:>=40", ["a3", "a4", "a6", "a8"]),
        ("age:<25 sex:=male", ["a7"]),
        ("purpose:=CAR age:>40.5", ["a3", "a6"]),
        ('purpose:"radio/tv"', ["a2", "a5"]),
        ("tag:checked", ["a1", "a4"]),
        ("tag:checked purpose:business", ["a4"]),
        ("radio", ["a2", "a5"]),  # a word: key, text or any field
        ("a7", ["a7"]),
        ("credit:bad", ["a2", "a5", "a7"]),  # admins search the hidden outcome too
        ("sex:=fem", []),
        ("age:30..45", ["a2", "a3", "a8"]),  # a range, both ends included
        ("age:40..40", ["a8"]),
        ("age:50..", ["a4", "a6"]),
        ("age:..22 sex:female", ["a1"]),
    ],
)
def test_the_search_rule_term_by_term(credit, query, expected):
    assert keys(credit, query) == expected


def test_hidden_fields_are_never_searched_for_annotators_eyes(credit):
    hidden = credit.hidden_columns
    assert hidden == ["credit"]
    with pytest.raises(InvalidInput, match="No field named 'credit'"):
        keys(credit, "credit:bad", hidden=hidden)
    assert keys(credit, "credit:bad", hidden=hidden, strict=False) == []
    assert keys(credit, "bad", hidden=hidden) == []
    assert keys(credit, "good", hidden=hidden, strict=False) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("colour:red", "No field named 'colour' (fields: age, purpose, sex, credit, id;"),
        ("age:>old", "age:> needs a number, not 'old'"),
        ('purpose:"car', "A quote in the search is not closed"),
        (" ".join(["car"] * 11), "At most 10 search terms"),
    ],
)
def test_bad_filters_say_what_is_wrong(credit, query, message):
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(")):
        items_matching(space_id=credit.pk, query=query)
    assert keys(credit, query, strict=False) == [] or len(query) > 40


@pytest.fixture
def study(credit):
    study = make_study(space=credit, overlap=1, target_per_annotator=10)
    make_user("boss", study=study, role=Role.ADMIN)
    make_user("rev", study=study, role=Role.REVIEWER)
    make_user("ann", study=study, role=Role.ANNOTATOR)
    return study


@pytest.fixture
def as_user(client, study):
    def login(username):
        client.force_login(get_user_model().objects.get(username=username))
        return client

    return login


def browse(study, q=""):
    return reverse("annotation:study-browse", args=[study.pk]) + (f"?q={q}" if q else "")


def test_admins_browse_every_field_and_reviewers_the_shown_ones(study, as_user):
    page = as_user("boss").get(browse(study, "purpose:car"))
    body = page.content.decode()
    assert page.status_code == 200
    assert "<strong>4</strong> items match" in body
    assert 'credit <span class="muted">(hidden)</span>' in body
    assert 'id="pool-from-filter"' in body
    page = as_user("rev").get(browse(study, "purpose:car"))
    body = page.content.decode()
    assert "<strong>4</strong> items match" in body
    assert "(hidden)" not in body
    assert "good" not in body
    assert 'id="pool-from-filter"' not in body  # reviewers read, admins change
    refused = as_user("rev").get(browse(study, "credit:bad"))  # hidden: not theirs to search
    assert refused.status_code == 400
    assert "fields: age, purpose, sex, id;" in refused.content.decode()
    assert as_user("ann").get(browse(study)).status_code == 403


def test_a_bad_filter_is_a_400_with_its_message(study, as_user):
    page = as_user("boss").get(browse(study, "colour:red"))
    assert page.status_code == 400
    assert "No field named &#x27;colour&#x27;" in page.content.decode()


def test_the_pool_made_from_a_filter_replaces_or_extends_it(study, as_user):
    client = as_user("boss")
    url = reverse("annotation:study-pool-filter", args=[study.pk])
    response = client.post(url, {"q": "purpose:car age:>30", "replace": "1"})
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.pool == Study.Pool.KEYS
    assert sorted(pool_items(study=study).values_list("key", flat=True)) == ["a3", "a6", "a8"]
    client.post(url, {"q": "tag:checked", "replace": "0"})
    pooled = sorted(pool_items(study=study).values_list("key", flat=True))
    assert pooled == ["a1", "a3", "a4", "a6", "a8"]
    event = AuditEvent.objects.filter(action=AuditEvent.Action.STUDY_POOL).latest("id")
    assert event.detail == {"keys": 2, "added": 2, "replace": False, "pool": 5}
    # the browser marks what is pooled
    body = client.get(browse(study, "sex:female")).content.decode()  # a1, a4, a5, a8
    assert body.count("<td>yes</td>") == 3
    assert body.count("<td>no</td>") == 1


def test_a_filter_that_would_drop_a_paired_item_or_matches_nothing_changes_nothing(study, as_user):
    a1, a2 = (Item.objects.get(space=study.space, key=k) for k in ("a1", "a2"))
    CandidatePair.objects.create(study=study, item_a=a1, item_b=a2)
    client = as_user("boss")
    url = reverse("annotation:study-pool-filter", args=[study.pk])
    before = study.pool
    for q, message in [
        ("purpose:car", "item(s) of gold or candidate pairs would leave the pool: a2"),
        ("purpose:boat", "No item matches the filter"),
        ("colour:red", "No field named"),
    ]:
        response = client.post(url, {"q": q, "replace": "1"}, follow=True)
        assert message in response.content.decode().replace("&#x27;", "'")
        study.refresh_from_db()
        assert study.pool == before
    assert as_user("rev").post(url, {"q": ""}).status_code == 403


def test_one_item_opened(study, as_user):
    item = Item.objects.get(space=study.space, key="a4")
    url = reverse("annotation:study-item", args=[study.pk, item.pk])
    body = as_user("boss").get(url).content.decode()
    assert "business" in body
    assert "hidden from annotators" in body
    assert "checked" in body
    body = as_user("rev").get(url).content.decode()
    assert "business" in body
    assert "hidden from annotators" not in body
    other = make_study(space=study.space, name="Other")
    assert (
        as_user("boss").get(reverse("annotation:study-item", args=[other.pk, item.pk])).status_code
        == 404
    )


def test_the_browser_sorts_by_a_field_and_counts_a_fields_values(study, as_user):
    """Ranges, sorting by a field and counts per value of a categorical field (the pool's
    balance): the data browser for tables."""
    client = as_user("boss")
    url = reverse("annotation:study-browse", args=[study.pk])
    page = client.get(url, {"q": "age:20..60", "sort": "-age"})
    assert page.status_code == 200
    assert [i.key for i in page.context["rows"]] == ["a6", "a3", "a8", "a2", "a5", "a1"]
    page = client.get(url, {"sort": "age"})
    assert [i.key for i in page.context["rows"]][:3] == ["a7", "a1", "a5"]
    page = client.get(url, {"count": "purpose"})
    assert page.context["value_counts"] == [
        ("car", 4, 0.5),
        ("radio/tv", 2, 0.25),
        ("business", 1, 0.125),
        ("education", 1, 0.125),
    ]
    assert 'id="value-counts"' in page.content.decode()
    # In the pool only: the pool's balance.
    pool_upload(
        user=get_user_model().objects.get(username="boss"), study=study, keys=["a1", "a2", "a4"]
    )
    page = client.get(url, {"count": "sex", "pool": "1"})
    assert page.context["total"] == 3
    assert page.context["value_counts"] == [("female", 2, 2 / 3), ("male", 1, 1 / 3)]
    # A reviewer may neither sort by nor count a hidden field; an unknown one is a 400.
    refused = as_user("rev").get(url, {"count": "credit"})
    assert refused.status_code == 400
    assert "No field named &#x27;credit&#x27; to count" in refused.content.decode()
    assert client.get(url, {"sort": "-colour"}).status_code == 400
