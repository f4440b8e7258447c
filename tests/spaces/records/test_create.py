"""record_space_create: a record space from a DataFrame — φ stored as JSON, records kept, atomic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from numpy.testing import assert_allclose

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item
from spaces.records.create import record_space_create
from spaces.records.featuremap import apply_feature_map


def people() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": ["p1", "p2", "p3", "p4"],
            "age": [25, 35, 45, 55],
            "sex": ["Female", "Male", "Female", "Male"],
            "hours": [40.0, 50.5, np.nan, 20.0],
            "income": ["<=50K", ">50K", ">50K", "<=50K"],
        }
    )


def create(**overrides):
    kwargs = {
        "name": "people",
        "frame": people(),
        "numeric": ["age"],
        "categorical": ["sex"],
        "excluded": ["hours", "id"],
        "label_column": "income",
        "owner": None,
    }
    return record_space_create(**(kwargs | overrides))


@pytest.mark.django_db
def test_record_space_stores_map_records_and_vectors(media_root):
    owner = get_user_model().objects.create_user("ann")
    space = create(owner=owner, key_column="id")
    space.refresh_from_db()
    assert space.kind == EmbeddingSpace.Kind.RECORDS
    assert space.label_column == "income"
    spec = space.feature_map
    assert spec["excluded"] == ["hours", "id", "income"]
    assert spec["feature_names"] == ["age", "sex=Female", "sex=Male"]
    assert space.dimension == 3
    assert space.item_count == 4
    assert "by ann" in space.source
    items = list(Item.objects.filter(space=space).order_by("row"))
    assert [i.key for i in items] == ["p1", "p2", "p3", "p4"]
    assert {i.kind for i in items} == {Item.Kind.RECORD}
    assert items[2].payload == {
        "id": "p3",
        "age": 45,
        "sex": "Female",
        "hours": None,
        "income": ">50K",
    }
    assert items[1].payload["hours"] == 50.5
    # The stored matrix is φ(records): age standardised by hand, sex one-hot.
    sd = np.std([25, 35, 45, 55])
    expected = np.column_stack([(np.array([25, 35, 45, 55]) - 40) / sd, [1, 0, 1, 0], [0, 1, 0, 1]])
    assert_allclose(space.load_matrix(), expected, atol=1e-6)  # stored as float32
    # Anyone can embed the records again from the stored JSON alone.
    records = pd.DataFrame([i.payload for i in items])
    assert_allclose(apply_feature_map(spec, records), space.load_matrix(), atol=1e-6)


@pytest.mark.django_db
def test_keys_default_to_row_numbers(media_root):
    space = create()
    assert list(space.items.order_by("row").values_list("key", flat=True)) == [
        "row 1",
        "row 2",
        "row 3",
        "row 4",
    ]


@pytest.mark.django_db
def test_annotators_see_every_column_but_the_label_unless_told_otherwise(media_root):
    assert create().hidden_columns == ["income"]
    assert create(name="no label", label_column="").hidden_columns == []
    chosen = create(name="chosen", hidden_columns=["sex", "id"])  # in the frame's order
    assert chosen.hidden_columns == ["id", "sex"]
    item = chosen.items.get(row=1)
    assert item.shown_payload == {"age": 35, "hours": 50.5, "income": ">50K"}
    assert create(name="all shown", hidden_columns=[]).hidden_columns == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"numeric": ["salary"]}, "column 'salary' is missing"),
        ({"numeric": ["hours"], "excluded": ["id"]}, "column 'hours', row 2: is missing"),
        ({"numeric": ["sex"], "categorical": []}, "'Female' is not a number"),
        ({"frame": people().head(0)}, "no rows"),
        ({"key_column": "sex"}, "row 3: the key 'Female' appears twice"),
        ({"key_column": "nope"}, "no column 'nope'"),
        ({"name": "  "}, "needs a name"),
        ({"hidden_columns": ["salary"]}, "no column 'salary' to hide"),
        ({"hidden_columns": "income"}, "a list of column names"),
    ],
)
def test_bad_input_leaves_nothing(media_root, overrides, message):
    with pytest.raises(EmbeddingFormatError, match=message):
        create(**overrides)
    assert not EmbeddingSpace.objects.exists()
    assert not Item.objects.exists()
    assert not list(media_root.glob("spaces/*"))


@pytest.mark.django_db
def test_duplicate_name_is_refused_and_the_first_space_is_untouched(media_root):
    first = create()
    with pytest.raises(EmbeddingFormatError, match="already exists"):
        create()
    assert list(EmbeddingSpace.objects.values_list("pk", flat=True)) == [first.pk]
    assert len(list((media_root / "spaces").glob("*"))) == 1


@pytest.mark.django_db
def test_a_failure_while_storing_items_rolls_back_and_removes_the_matrix(media_root, monkeypatch):
    from spaces import services

    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(services.Item.objects, "bulk_create", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        create()
    assert not EmbeddingSpace.objects.exists()
    assert not list((media_root / "spaces").glob("*"))
