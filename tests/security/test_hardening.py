"""Issue 18's reproductions, one test each (the generated sweep is ``test_hostile_input.py``,
the concurrency cases ``test_limits_concurrency.py``). Run on PostgreSQL in CI."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from accounts.models import ApiToken
from annotation.models import ComparableGroup
from learning.exports.formats import csv_cell

from .conftest import World

DEEP = "[" * 1001 + "]" * 1001


def _json(client, method, url, text):
    return getattr(client, method)(url, text, content_type="application/json")


# --- 1. deeply nested JSON ------------------------------------------------------------------


@pytest.mark.parametrize("depth", [33, 1001, 3000])
def test_deeply_nested_json_is_400_on_judgment_and_group_writes(world: World, depth):
    client = world.token_client("ann_a")
    deep = "[" * depth + "]" * depth
    for method, url in [
        ("post", reverse("api-judgments", args=[world.study_a.pk])),
        ("post", reverse("api-groups", args=[world.study_a.pk])),
        ("patch", reverse("api-group", args=[world.study_a.pk, world.group.pk])),
    ]:
        response = _json(client, method, url, deep)
        assert response.status_code == 400, (url, response.content[:200])
        assert "nested deeper than 32 levels" in response.json()["detail"]


def test_nesting_inside_strings_does_not_count(world: World):
    client = world.token_client("ann_a")
    body = {"name": "[{" * 60, "members": [world.items[5].pk, world.items[6].pk]}
    response = _json(
        client, "post", reverse("api-groups", args=[world.study_a.pk]), json.dumps(body)
    )
    assert response.status_code == 201, response.content[:200]


# --- 2. NUL in item search --------------------------------------------------------------------


@pytest.mark.parametrize("query", ["study={study}&q=a%00b", "space={space}&q=%00"])
def test_nul_in_item_search_is_400(world: World, query):
    url = (
        reverse("api-items")
        + "?"
        + query.format(study=world.study_a.pk, space=world.study_a.space_id)
    )
    response = world.token_client("su").get(url)
    assert response.status_code == 400
    assert "NUL" in response.json()["detail"]


# --- 3. NUL in a token name (form without a Django form) --------------------------------------


@pytest.mark.parametrize("name", ["job\x00", "\u200b\u202e"])
def test_bad_token_names_are_refused(world: World, client, name):
    client.force_login(world.users["rev_a"])  # a reviewer: allowed to create tokens
    before = ApiToken.objects.count()
    response = client.post(reverse("accounts:tokens"), {"name": name})
    assert response.status_code == 400
    assert ApiToken.objects.count() == before


def test_nul_and_surrogates_in_json_strings_are_400_naming_the_place(world: World):
    client = world.token_client("ann_a")
    url = reverse("api-groups", args=[world.study_a.pk])
    for text, why in [("a\x00", "NUL"), ("a\ud800", "lone surrogate")]:
        body = json.dumps({"name": "ok", "members": [], "extra": {"deep": [text]}})
        detail = _json(client, "post", url, body).json()["detail"]
        assert why in detail
        assert "extra.deep[0]" in detail
        key_body = json.dumps({text: 1})
        assert why in _json(client, "post", url, key_body).json()["detail"]


# --- 5. CSV formula injection -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ['=HYPERLINK("http://x","y")', "+1", "-1+2", "@SUM(A1)", "\tx", "\rx"]
)
def test_csv_exports_escape_formula_cells(world: World, name):
    ComparableGroup.objects.filter(pk=world.group.pk).update(name=name)
    client = world.token_client("adm_a")
    response = client.get(reverse("api-export-groups", args=[world.study_a.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    names = {row["name"] for row in rows}
    assert "'" + name in names
    assert name not in names
    jsonl = client.get(reverse("api-export-groups", args=[world.study_a.pk, "jsonl"]))
    assert name in [
        json.loads(line)["name"] for line in b"".join(jsonl.streaming_content).splitlines()
    ]


def test_csv_cells_escape_only_text():
    assert csv_cell(-1.5) == -1.5
    assert csv_cell(-3) == -3
    assert csv_cell(None) == ""
    assert csv_cell("-3") == "'-3"
    assert csv_cell("a=b") == "a=b"


# --- 10. smaller ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["\u200b", "\u202e\u202c", "\u2066\u2069 \ufeff", "\u200d\u200c"])
def test_invisible_group_names_are_refused(world: World, name):
    client = world.token_client("ann_a")
    before = ComparableGroup.objects.count()
    url = reverse("api-groups", args=[world.study_a.pk])
    response = _json(client, "post", url, json.dumps({"name": name, "members": []}))
    assert response.status_code == 400, response.content
    assert "visible" in response.json()["detail"]
    assert ComparableGroup.objects.count() == before
    patch = reverse("api-group", args=[world.study_a.pk, world.group.pk])
    assert _json(client, "patch", patch, json.dumps({"name": name})).status_code == 400


def test_a_name_with_visible_text_and_bidi_marks_is_kept(world: World):
    client = world.token_client("ann_a")
    url = reverse("api-groups", args=[world.study_a.pk])
    response = _json(client, "post", url, json.dumps({"name": "\u2067عربي\u2069", "members": []}))
    assert response.status_code == 201


@pytest.mark.parametrize("role", ["ann_a", "adm_a"])
def test_the_json_api_refuses_form_bodies(world: World, role):
    client = world.token_client(role)
    before = ComparableGroup.objects.count()
    for method, url in [
        ("post", reverse("api-groups", args=[world.study_a.pk])),
        ("post", reverse("api-judgments", args=[world.study_a.pk])),
        ("patch", reverse("api-group", args=[world.study_a.pk, world.group.pk])),
    ]:
        for fmt in ["multipart", None]:
            data = {"name": "formed", "members": []}
            if fmt:
                response = getattr(client, method)(url, data, format=fmt)
            else:
                body = "name=formed"
                ctype = "application/x-www-form-urlencoded"
                response = getattr(client, method)(url, body, content_type=ctype)
            assert response.status_code == 415, (url, fmt, response.status_code)
    assert ComparableGroup.objects.count() == before


def test_a_chunked_body_without_length_is_411_not_field_required(world: World):
    client = world.token_client("ann_a")
    url = reverse("api-judgments", args=[world.study_a.pk])
    response = client.generic(
        "POST",
        url,
        b'{"label": "comparable"}',
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="",
    )
    assert response.status_code == 411
    assert "Content-Length" in response.json()["detail"]
