"""Input from outside that answered 500 in the attack of issue #39 (items 4, 5, 7): searches
with a non-finite number, numbers past the columns' range, a CSV field over 128 KB and JSON
nested 100,000 deep — each a 400 or a form error now, nothing written. (PostgreSQL showed the
first two; run these with DATABASE_URL set as CI does.)"""

from __future__ import annotations

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.models import MAX_OVERLAP, MAX_TARGET, Membership, PairJudgment
from annotation.setup.files import parse_keys, parse_pairs
from common.errors import InvalidInput
from spaces.records.create import record_space_create

from .factories import make_study, make_user

pytestmark = pytest.mark.django_db
Role = Membership.Role
NON_FINITE = ["age:>inf", "age:>nan", "age:>=1e309", "age:<-Infinity"]


@pytest.fixture
def people(media_root):
    frame = pd.DataFrame(
        {"name": ["Ana", "Bo", "Chloé"], "age": [25, 38, 52], "sex": ["F", "M", "F"]}
    )
    return record_space_create(
        name="people", frame=frame, numeric=["age"], categorical=["sex"], key_column="name"
    )


@pytest.fixture
def record_study(people):
    study = make_study(space=people, name="People")
    make_user("lead", study=study, role=Role.ADMIN)
    make_user("ann", study=study, role=Role.ANNOTATOR)
    return study


def logged_in(username: str) -> Client:
    client = Client()
    client.force_login(Membership.objects.get(user__username=username).user)
    return client


# --- 4. search with a non-finite number ----------------------------------------------------------


@pytest.mark.parametrize("query", NON_FINITE)
def test_a_non_finite_number_in_the_data_browser_is_a_400_with_a_reason(record_study, query):
    page = logged_in("lead").get(
        reverse("annotation:study-browse", args=[record_study.pk]), {"q": query}
    )
    assert page.status_code == 400
    assert "needs a finite number" in page.content.decode()


@pytest.mark.parametrize("query", NON_FINITE)
def test_a_non_finite_number_in_the_item_search_matches_nothing(record_study, query):
    answer = logged_in("ann").get(reverse("api-items"), {"study": record_study.pk, "q": query})
    assert answer.status_code == 200
    assert answer.json() == []
    finite = logged_in("ann").get(reverse("api-items"), {"study": record_study.pk, "q": "age:>30"})
    assert [i["key"] for i in finite.json()] == ["Bo", "Chloé"]  # numbers still compare


# --- 5. integers past the columns' range ----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"overlap": 32768},
        {"overlap": MAX_OVERLAP + 1},
        {"target_per_annotator": 2**31},
        {"target_per_annotator": MAX_TARGET + 1},
        {"space": 2**70},
        {"tags": [2**70]},
    ],
)
def test_study_patch_refuses_numbers_out_of_range(record_study, body):
    answer = logged_in("lead").patch(
        reverse("api-study", args=[record_study.pk]), body, content_type="application/json"
    )
    assert answer.status_code == 400, answer.content
    record_study.refresh_from_db()
    assert (record_study.overlap, record_study.target_per_annotator) == (2, 20)


def test_the_largest_numbers_allowed_are_stored(record_study):
    body = {"overlap": MAX_OVERLAP, "target_per_annotator": MAX_TARGET}
    answer = logged_in("lead").patch(
        reverse("api-study", args=[record_study.pk]), body, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    record_study.refresh_from_db()
    assert (record_study.overlap, record_study.target_per_annotator) == (MAX_OVERLAP, MAX_TARGET)


@pytest.mark.parametrize(
    ("field", "value"), [("overlap", "99999999"), ("target_per_annotator", "2147483648")]
)
def test_the_settings_form_shows_a_form_error(record_study, field, value):
    url = reverse("annotation:study-settings", args=[record_study.pk])
    data = {
        "name": record_study.name,
        "space": record_study.space_id,
        "mode": record_study.mode,
        "pool": "all",
        "strategy": record_study.strategy,
        "overlap": 2,
        "gold_rate": 0,
        "target_per_annotator": 20,
        "is_active": "on",
        field: value,
    }
    page = logged_in("lead").post(url, data)
    assert page.status_code == 400
    assert "is between 1 and" in page.content.decode()
    record_study.refresh_from_db()
    assert (record_study.overlap, record_study.target_per_annotator) == (2, 20)


def test_a_members_target_out_of_range_is_refused(record_study):
    lead = logged_in("lead")
    make_user("newcomer")
    api = reverse("api-study-members", args=[record_study.pk])
    body = {"user": "newcomer", "target": 2**31}
    assert lead.post(api, body, content_type="application/json").status_code == 400
    page = lead.post(
        reverse("annotation:study-members", args=[record_study.pk]),
        {"add-who": "newcomer", "add-role": "annotator", "add-target": str(2**31)},
    )
    assert page.status_code == 400
    ann = Membership.objects.get(study=record_study, user__username="ann")
    change = lead.post(
        reverse("annotation:study-member", args=[record_study.pk, ann.pk]),
        {"role": "annotator", "target": str(2**31)},
    )
    assert change.status_code == 400
    ann.refresh_from_db()
    assert ann.target is None
    assert not Membership.objects.filter(user__username="newcomer").exists()


# --- 7. parser bombs --------------------------------------------------------------------------------


def import_preview(study, name: str, data: bytes) -> str:
    page = logged_in("lead").post(
        reverse("annotation:study-import", args=[study.pk]),
        {"file": SimpleUploadedFile(name, data), "kind": "auto", "fmt": "auto"},
    )
    assert page.status_code == 400, page.status_code
    return page.content.decode()


def test_a_csv_field_over_128_kb_is_a_line_error(record_study):
    field = "x" * (200 * 1024)
    html = import_preview(record_study, "big.csv", f"key_a,key_b,label\nAna,{field},1\n".encode())
    assert "Line 2: not a valid CSV row" in html
    header = import_preview(record_study, "head.csv", f"key_a,{field}\n".encode())
    assert "Line 1: not a valid CSV row" in header
    assert not PairJudgment.objects.exists()


def test_json_lines_nested_100000_deep_are_a_line_error(record_study):
    bomb = ("[" * 100_000 + "]" * 100_000).encode()
    html = import_preview(record_study, "deep.jsonl", b'{"key_a": "Ana"}\n' + bomb + b"\n")
    assert "Line 2: not valid JSON (nested too deep)" in html
    nested = '{"key": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(InvalidInput, match="Line 1: not valid JSON"):
        parse_keys(nested)  # the pool's keys
    with pytest.raises(InvalidInput, match="Line 1: not valid JSON"):
        parse_pairs(nested, labelled=True)  # gold pairs
