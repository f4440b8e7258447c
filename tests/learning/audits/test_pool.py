"""The score file's keys looked up in the pool: by query (few keys) and from the pool read once
(many) give the same ids and rows (``learning/audits/pool.py``)."""

from __future__ import annotations

import numpy as np

from learning.audits import pool as pool_module
from learning.audits.pool import PoolIndex
from spaces.models import Item


def test_query_and_loaded_pool_find_the_same_keys(words, monkeypatch):
    study = words["study"]
    items = list(Item.objects.filter(space=study.space).order_by("row"))
    keys = np.array([i.key for i in items[::2]] + ["nope", items[1].key, "x~y=z"], dtype=object)
    by_query = PoolIndex(study).find(keys)
    monkeypatch.setattr(pool_module, "POOL_LOAD_AFTER", 0)
    loaded = PoolIndex(study)
    by_index = loaded.find(keys)
    assert loaded.index is not None  # the second took the whole pool
    expected = np.array([i.pk for i in items[::2]] + [-1, items[1].pk, -1])
    for ids, rows in (by_query, by_index):
        np.testing.assert_array_equal(ids, expected)
        np.testing.assert_array_equal(rows[:-3], [i.row for i in items[::2]])
    mapping = PoolIndex.mapping(keys, *by_index)
    assert mapping[items[1].key] == (items[1].pk, items[1].row)
    assert "nope" not in mapping
