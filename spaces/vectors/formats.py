"""The embedding formats (``FORMATS``), the :class:`Block` every parser yields, and the
limits the readers share (see :mod:`spaces.vectors.reader` for what each format is)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

FORMATS = ("word2vec", "glove", "word2vec-bin", "npy", "csv")
BLOCK_ROWS = 8192
# Text values are parsed a block at a time; each pending value is a Python string (~60 bytes),
# so text blocks are capped at this many values (~4 MB) rather than at BLOCK_ROWS rows.
TEXT_VALUES_PER_BLOCK = 65536
MAX_KEY_LENGTH = 255  # Item.key's max_length
MAX_KEY_BYTES = 4 * MAX_KEY_LENGTH  # UTF-8: a binary record's key, before decoding
MAX_BLANK_RUN = 1 << 20  # bytes of consecutive blank lines (a file of newlines is no embedding)
HEADER = re.compile(r"^\s*(\d+)\s+(\d+)\s*$")  # word2vec's "<count> <dimension>"


@dataclass(frozen=True)
class Block:
    """Up to ``BLOCK_ROWS`` consecutive vectors with their keys and source positions."""

    keys: list[str]
    vectors: np.ndarray  # (m, d) float32
    lines: list[int]
    payloads: list[dict] | None = None
