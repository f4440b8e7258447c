"""Small iteration helpers (Python 3.11 has no ``itertools.batched``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice


def batched(iterable: Iterable, size: int) -> Iterator[list]:
    """Lists of ``size`` consecutive items (the last one shorter)."""
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch
