"""The score file's keys looked up in the study's pool (``learning/audits/inputs.py``): by query
while few keys were asked (a request reads a file's head only), then from the whole pool read
once and looked up as a pandas index (the worker reading a large file: on the Adult demo's 90,486
rows of items and twins this took 7.7 of the audit's 24 s as 900-key queries)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotation.models import Study
from annotation.selectors import pool_items

LOOKUP = 900  # keys per pool query (SQLite's bound on a query's parameters, with room)
POOL_LOAD_AFTER = 5_000  # keys looked up by query; past this, the whole pool is read once


class PoolIndex:
    """Keys → (item id, matrix row) in the study's pool: by query for the first
    ``POOL_LOAD_AFTER`` keys (a request's head), then from the whole pool read once (a
    vectorised lookup; the worker reading a large file)."""

    def __init__(self, study: Study):
        self.study, self.asked, self.index = study, 0, None

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each key's item id and row, -1 where it is not in the pool."""
        self.asked += len(keys)
        if self.index is None and self.asked > POOL_LOAD_AFTER:
            found = list(pool_items(study=self.study).values_list("key", "id", "row"))
            numbers = np.array([f[1:] for f in found], dtype=np.int64).reshape(-1, 2)
            self.index = (pd.Index([f[0] for f in found]), numbers[:, 0], numbers[:, 1])
        if self.index is not None:
            where = self.index[0].get_indexer(keys)
            ids = np.where(where >= 0, self.index[1][where], -1)
            return ids, np.where(where >= 0, self.index[2][where], -1)
        pool: dict[str, tuple[int, int]] = {}
        items = pool_items(study=self.study)
        for start in range(0, len(keys), LOOKUP):
            batch = keys[start : start + LOOKUP].tolist()
            found = items.filter(key__in=batch).values_list("key", "id", "row")
            pool.update({k: (pk, row) for k, pk, row in found})
        pairs = np.array([pool.get(k, (-1, -1)) for k in keys], dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    @staticmethod
    def mapping(keys, ids, rows) -> dict[str, tuple[int, int]]:  # (the twins' parser reads it)
        hit = np.flatnonzero(ids >= 0)
        pairs = zip(ids[hit].tolist(), rows[hit].tolist(), strict=True)
        return dict(zip(keys[hit].tolist(), pairs, strict=True))
