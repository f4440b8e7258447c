"""Small embedding files for the import tests: five keys, a 5x4 matrix, each format written."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np

from spaces.models import EmbeddingSpace, Item

KEYS = ["the", "of", "and", "to", "a"]
MATRIX = np.arange(20, dtype=np.float32).reshape(5, 4) / 8 - 1


def text_lines(keys=KEYS, matrix=MATRIX) -> list[str]:
    return [
        f"{k} " + " ".join(repr(float(v)) for v in row) for k, row in zip(keys, matrix, strict=True)
    ]


def write(path: Path, lines: list[str] | bytes) -> Path:
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def word2vec_binary(keys=KEYS, matrix=MATRIX, newline=True, count=None) -> bytes:
    out = f"{count if count is not None else len(keys)} {matrix.shape[1]}\n".encode()
    for key, row in zip(keys, matrix, strict=True):
        out += (
            key.encode() + b" " + struct.pack(f"<{len(row)}f", *row) + (b"\n" if newline else b"")
        )
    return out


def stored_nothing(media: Path) -> bool:
    files = list((media / "spaces").glob("*")) if (media / "spaces").exists() else []
    return not EmbeddingSpace.objects.exists() and not Item.objects.exists() and not files


def assert_imported(space: EmbeddingSpace, keys=KEYS, matrix=MATRIX):
    assert space.dimension == matrix.shape[1]
    assert space.item_count == len(keys)
    items = list(Item.objects.filter(space=space).order_by("row"))
    assert [i.key for i in items] == keys
    assert [i.row for i in items] == list(range(len(keys)))
    np.testing.assert_allclose(space.load_matrix(), matrix, rtol=1e-6)
    assert space.load_matrix().dtype == np.float32
    assert hashlib.sha256(Path(space.matrix.path).read_bytes()).hexdigest() == space.sha256
