"""Searching records and texts by any displayed field (server-side; SQLite and PostgreSQL)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.groups.selectors import item_search
from spaces.models import EmbeddingSpace, Item
from spaces.records.create import record_space_create
from spaces.services import space_from_matrix
from tests.annotation.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(media_root):
    frame = pd.DataFrame(
        {
            "name": ["Ana", "Bo", "Chloé", "Dan"],
            "age": [25, 38, 52, 61],
            "workclass": ["Private", "State-gov", "Private", "Self-emp"],
            "sex": ["Female", "Male", "Female", "Male"],
        }
    )
    return record_space_create(
        name="people",
        frame=frame,
        numeric=["age"],
        categorical=["workclass", "sex"],
        key_column="name",
    )


def keys(items) -> list[str]:
    return [i.key for i in items]


def test_any_field_matches(people):
    assert keys(item_search(space_id=people.pk, query="state-GOV")) == ["Bo"]
    assert keys(item_search(space_id=people.pk, query="52")) == ["Chloé"]
    assert keys(item_search(space_id=people.pk, query="private")) == ["Ana", "Chloé"]
    assert keys(item_search(space_id=people.pk, query="chloé")) == ["Chloé"]  # non-ASCII
    assert keys(item_search(space_id=people.pk, query="nobody")) == []


def test_field_value_looks_in_one_field(people):
    # "male" is in "Female" too: substring search, in the sex field only.
    assert keys(item_search(space_id=people.pk, query="sex:male")) == ["Ana", "Bo", "Chloé", "Dan"]
    assert keys(item_search(space_id=people.pk, query="workclass:self")) == ["Dan"]
    assert keys(item_search(space_id=people.pk, query="name:bo")) == ["Bo"]


def test_search_respects_the_study_pool_and_limit(people):
    study = make_study(space=people, pool="keys")
    study.pool_keys.set(Item.objects.filter(space=people, key__in=["Ana", "Bo"]))
    assert keys(item_search(space_id=people.pk, query="private", study=study)) == ["Ana"]
    assert keys(item_search(space_id=people.pk, query="a", limit=2)) == ["Ana", "Bo"]


def test_texts_are_searched_inside(media_root):
    texts = ["The nurse went home.", "A carpenter built a table.", "Markets fell."]
    space = space_from_matrix(
        name="texts",
        matrix=np.eye(3),
        keys=["t1", "t2", "t3"],
        texts=texts,
        space_kind=EmbeddingSpace.Kind.TEXTS,
        item_kind=Item.Kind.TEXT,
        source="test",
    )
    assert keys(item_search(space_id=space.pk, query="CARPENTER")) == ["t2"]
    assert keys(item_search(space_id=space.pk, query="t3")) == ["t3"]
