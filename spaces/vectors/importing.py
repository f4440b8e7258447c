"""Importing an embedding file as a space, streamed: ``import_embeddings`` and the upload task.

``space_import`` streams the file through :class:`spaces.vectors.reader.EmbeddingReader`
into a ``.npy`` file in media storage (rows appended block by block; the header is written
last, so the matrix is never held in memory), then creates the space, its items and their tags
in one transaction. On any error nothing is stored: the transaction rolls back and the file is
removed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import transaction

from common.iterables import batched
from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item
from spaces.services import (
    BATCH_SIZE,
    NPY_HEADER_BYTES,
    Progress,
    items_tag,
    matrix_file,
    npy_header,
    space_name_check,
    space_row_create,
)
from spaces.vectors.reader import EmbeddingReader


@dataclass(frozen=True)
class _Rows:
    keys: list[str]
    lines: list[int]
    payloads: list[dict | None]
    dimension: int


def _write_matrix(reader: EmbeddingReader, target: Path, progress: Progress | None) -> _Rows:
    """Stream the reader's blocks into ``target`` (a ``.npy``); return keys and positions."""
    keys: list[str] = []
    lines: list[int] = []
    payloads: list[dict | None] = []
    with open(target, "wb") as f:
        f.write(b"\0" * NPY_HEADER_BYTES)
        for block in reader:
            f.write(np.ascontiguousarray(block.vectors, dtype="<f4").tobytes())
            keys.extend(block.keys)
            lines.extend(block.lines)
            payloads.extend(block.payloads or [None] * len(block.keys))
            if progress:
                progress("reading", len(keys), reader.expected_rows)
        f.seek(0)
        f.write(npy_header((len(keys), reader.dimension)))
    return _Rows(keys, lines, payloads, reader.dimension)


def space_import(
    *,
    path: str | Path,
    name: str,
    fmt: str = "auto",
    limit: int | None = None,
    source: str = "",
    kind: str | None = None,
    tags: Sequence[str] = (),
    progress: Progress | None = None,
    vocab: str | Path | None = None,
    vectors: str | Path | None = None,
    key_column: str | None = None,
    fields: Sequence[str] | None = None,
    item_kinds: Mapping[str, str] | None = None,
    item_tags: Mapping[str, Collection[str]] | None = None,
    owner=None,
) -> EmbeddingSpace:
    """Import an embedding file as a new space; atomic (nothing stored on any error).
    ``owner``: who may use it besides staff (``spaces.sharing``; None: staff only).

    ``kind`` is every item's kind (default: ``record`` when the file has record fields, else
    ``word``); ``item_kinds`` overrides it per key. ``tags`` go on every item, ``item_tags``
    maps a tag to the keys that get it. Raises :class:`EmbeddingFormatError` on bad input.
    """
    name = space_name_check(name)
    if kind is not None and kind not in Item.Kind.values:
        raise EmbeddingFormatError(f"unknown kind {kind!r}; choose one of {Item.Kind.values}")
    bad_kinds = set((item_kinds or {}).values()) - set(Item.Kind.values)
    if bad_kinds:
        raise EmbeddingFormatError(f"unknown kind {sorted(bad_kinds)[0]!r}")
    reader = EmbeddingReader(
        path,
        fmt=fmt,
        limit=limit,
        vocab=vocab,
        vectors=vectors,
        key_column=key_column,
        fields=list(fields or []),
    )
    with matrix_file(name) as stored:
        rows = _write_matrix(reader, stored.partial, progress)
        sha256 = stored.store()
        if progress:
            progress("storing", 0, len(rows.keys))
        space = _space_store(
            name=name,
            relative=stored.name,
            sha256=sha256,
            rows=rows,
            source=source or f"imported from {Path(path).name} ({reader.format})",
            kind=kind,
            tags=tags,
            item_kinds=item_kinds or {},
            item_tags=item_tags or {},
            progress=progress,
            owner=owner,
        )
    return space


@transaction.atomic
def _space_store(
    *,
    name: str,
    relative: str,
    sha256: str,
    rows: _Rows,
    source: str,
    kind: str | None,
    tags: Sequence[str],
    item_kinds: Mapping[str, str],
    item_tags: Mapping[str, Collection[str]],
    progress: Progress | None,
    owner=None,
) -> EmbeddingSpace:
    space = space_row_create(
        owner=owner,
        name=name,
        dimension=rows.dimension,
        source=source,
        matrix=relative,
        sha256=sha256,
        item_count=len(rows.keys),
    )
    has_payload = any(p is not None for p in rows.payloads)
    default_kind = kind or (Item.Kind.RECORD if has_payload else Item.Kind.WORD)
    items = (
        Item(space=space, key=key, kind=item_kinds.get(key, default_kind), payload=payload, row=i)
        for i, (key, payload) in enumerate(zip(rows.keys, rows.payloads, strict=True))
    )
    done = 0
    for batch in batched(items, BATCH_SIZE):
        Item.objects.bulk_create(batch)
        done += len(batch)
        if progress:
            progress("storing", done, len(rows.keys))
    all_tags = dict.fromkeys(tags, rows.keys)
    for tag, keys in item_tags.items():
        all_tags[tag] = set(all_tags.get(tag, ())) | set(keys)
    items_tag(space=space, keys_by_tag=all_tags)
    return space
