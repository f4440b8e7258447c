"""A CSV uploaded in the browser keeps its numbers as numbers (``spaces.records.values``): the
data browser's comparisons (``age:>=30``, the README's example) and its sorting read them, and a
cell that a number would change (``007``, ``1.50``) keeps its text."""

from __future__ import annotations

import pandas as pd
import pytest

from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records import importing
from spaces.records.values import NumberColumns, number_of
from spaces.search import items_matching

from .uploading import choose, post_file

TABLE = (
    b"id,age,zip,score,wage,sex\n"
    b"p1,39,007,1.50,75.04,Male\n"
    b"p2,25,010,2,101.5,Female\n"
    b"p3,61,123,3,,Male\n"
    b"p4,30,200,4,88,Female\n"
)
ANSWER = {
    "col_0": "excluded",
    "col_1": "numeric",
    "col_2": "categorical",
    "col_3": "numeric",
    "col_4": "excluded",
    "col_5": "categorical",
    "label_column": "wage",
    "key_column": "id",
}


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("39", 39),
        (" -2 ", -2),
        ("0", 0),
        ("75.04", 75.04),
        ("007", None),
        ("1.50", None),
        ("1e3", None),
        ("0.00001", None),  # JSON would write 1e-05
        ("1234567890123456", None),  # 16 digits
        ("NaN", None),
        ("inf", None),
        ("", None),
        ("12a", None),
    ],
)
def test_a_cell_is_a_number_only_when_storing_it_as_one_changes_nothing(text, number):
    assert number_of(text) == number
    assert type(number_of(text)) is type(number)


def test_columns_of_numbers_found_across_chunks():
    found = NumberColumns()
    found.update(pd.DataFrame({"a": ["1", "2"], "b": ["1", "x"], "c": ["", ""], "d": ["3", ""]}))
    found.update(
        pd.DataFrame({"a": ["3.5", "4"], "b": ["1", "2"], "c": ["", ""], "d": ["007", ""]})
    )
    assert found.numbers == ["a"]


def test_an_uploaded_csv_stores_numbers_and_the_browser_compares_and_sorts_them(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    url = post_file(staff_client, TABLE, "people.csv")["Location"]
    assert choose(staff_client, url, ANSWER, django_capture_on_commit_callbacks).status_code == 302
    assert importing.record_import_run(import_id=EmbeddingImport.objects.get().pk) == "done"
    space = EmbeddingSpace.objects.get(name="people")
    assert Item.objects.get(space=space, key="p1").payload == {
        "id": "p1",
        "age": 39,
        "zip": "007",
        "score": "1.50",
        "wage": 75.04,
        "sex": "Male",
    }
    assert Item.objects.get(space=space, key="p3").payload["wage"] is None
    found = items_matching(space_id=space.pk, query="age:>=30")
    assert sorted(found.values_list("key", flat=True)) == ["p1", "p3", "p4"]
    found = items_matching(space_id=space.pk, query="wage:<90")
    assert sorted(found.values_list("key", flat=True)) == ["p1", "p4"]
    by_age = Item.objects.filter(space=space).order_by("payload__age")
    assert list(by_age.values_list("key", flat=True)) == ["p2", "p4", "p1", "p3"]
    # The text column keeps its text: zip:007 is found as text.
    assert list(
        items_matching(space_id=space.pk, query="zip:=007").values_list("key", flat=True)
    ) == ["p1"]
