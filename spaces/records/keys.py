"""The keys of a record table's items, checked a chunk at a time: the key column's values
(stripped, non-empty, at most ``MAX_KEY`` characters, unique), or ``row 1``, ``row 2``, … .

Uniqueness over a table read in chunks costs 8 bytes a row: each key's 64-bit hash is kept, and
only when two hashes agree are the keys read again to name both rows (or to find that the hashes
collided and the keys differ).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from spaces.records.errors import ColumnChoiceError
from spaces.services import MAX_KEY


class KeyCheck:
    def __init__(self, key_column: str):
        self.key_column = key_column
        self.hashes: list[np.ndarray] = []

    def keys(self, frame: pd.DataFrame) -> list[str]:
        """The keys of a chunk (its index: the record numbers)."""
        rows = frame.index.tolist()
        if not self.key_column:
            return [f"row {i}" for i in rows]
        if self.key_column not in frame.columns:
            raise ColumnChoiceError(f"no column {self.key_column!r} for the keys")
        column = frame[self.key_column]
        keys = ["" if pd.isna(v) else str(v).strip() for v in column.tolist()]
        for row, key in zip(rows, keys, strict=True):
            if not key or key == "nan" or len(key) > MAX_KEY:
                raise ColumnChoiceError(
                    f"row {row}: the key in {self.key_column!r} is empty or longer than "
                    f"{MAX_KEY} characters"
                )
        return keys

    def update(self, frame: pd.DataFrame) -> list[str]:
        """Check a chunk's keys and remember them (as hashes); returns them."""
        keys = self.keys(frame)
        if self.key_column:
            self.hashes.append(pd.util.hash_array(np.asarray(keys, dtype=object)))
        return keys

    def finish(self, chunks: Callable[[], Iterable[pd.DataFrame]]) -> None:
        """Refuse a key that appears twice, naming both rows; ``chunks`` reads the table again
        (called only when two hashes agree)."""
        if not self.hashes:
            return
        hashes = np.concatenate(self.hashes)
        values, counts = np.unique(hashes, return_counts=True)
        twice = set(values[counts > 1].tolist())
        if not twice:
            return
        first: dict[str, int] = {}
        for frame in chunks():
            keys = self.keys(frame)
            marks = pd.util.hash_array(np.asarray(keys, dtype=object))
            for row, key, mark in zip(frame.index.tolist(), keys, marks.tolist(), strict=True):
                if mark not in twice:
                    continue
                if key in first:
                    raise ColumnChoiceError(
                        f"row {row}: the key {key!r} appears twice (first in row {first[key]})"
                    )
                first[key] = row
