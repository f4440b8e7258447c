"""Services for embedding spaces: import a file as a space with its items, read vectors.

``space_import`` streams the file through :class:`spaces.embeddings.EmbeddingReader`
into a ``.npy`` file in media storage (rows appended block by block; the header is written
last, so the matrix is never held in memory), then creates the space, its items and their tags
in one transaction. On any error nothing is stored: the transaction rolls back and the file is
removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from common.iterables import batched
from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item, Tag
from spaces.vectors.reader import EmbeddingReader

BATCH_SIZE = 5000
MAX_KEY = 255  # Item.key's max_length
NPY_HEADER_BYTES = 128  # fixed, so the real shape can be written once all rows are in

# progress(stage, done, total): stage is "reading" (rows read) or "storing" (items saved).
Progress = Callable[[str, int, int | None], None]


@dataclass(frozen=True)
class _Rows:
    keys: list[str]
    lines: list[int]
    payloads: list[dict | None]
    dimension: int


@contextlib.contextmanager
def _matrix_file(name: str):
    """(relative name, final path, ``.part`` path) of a new matrix in media storage; on any
    error inside the block both files are removed."""
    relative = f"spaces/{slugify(name)[:60] or 'space'}-{uuid.uuid4().hex[:8]}.npy"
    target = Path(default_storage.path(relative))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        yield relative, target, partial
    except BaseException:
        partial.unlink(missing_ok=True)
        target.unlink(missing_ok=True)
        raise


def _npy_header(shape: tuple[int, int]) -> bytes:
    """A version-1.0 ``.npy`` header for little-endian float32, padded to a fixed length."""
    text = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({shape[0]}, {shape[1]}), }}"
    body_len = NPY_HEADER_BYTES - 10  # magic (6) + version (2) + header length (2)
    body = text.ljust(body_len - 1) + "\n"
    if len(body) != body_len:
        raise ValueError(f"matrix shape {shape} does not fit the .npy header")
    return b"\x93NUMPY\x01\x00" + body_len.to_bytes(2, "little") + body.encode("latin1")


def npy_sha256(matrix: np.ndarray) -> str:
    """The sha256 :func:`space_import` gives a float32 matrix (to recognise a stored space)."""
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    digest = hashlib.sha256(_npy_header(matrix.shape))
    digest.update(matrix.tobytes())
    return digest.hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while data := f.read(chunk):
            digest.update(data)
    return digest.hexdigest()


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
        f.write(_npy_header((len(keys), reader.dimension)))
    return _Rows(keys, lines, payloads, reader.dimension)


def space_name_check(name: str) -> str:
    """The stripped name of a new space; ``EmbeddingFormatError`` if empty, long or taken."""
    name = (name or "").strip()
    if not name:
        raise EmbeddingFormatError("the space needs a name")
    if len(name) > 200:
        raise EmbeddingFormatError("the space name is longer than 200 characters")
    if EmbeddingSpace.objects.filter(name=name).exists():
        raise EmbeddingFormatError(f"a space named {name!r} already exists")
    return name


def _space_row_create(**fields) -> EmbeddingSpace:
    """The space's row, in a savepoint: a name taken meanwhile is a clear error."""
    try:
        with transaction.atomic():
            return EmbeddingSpace.objects.create(**fields)
    except IntegrityError:  # a concurrent import took the name since the first check
        raise EmbeddingFormatError(f"a space named {fields['name']!r} already exists") from None


def _tag_ids(names: Iterable[str]) -> dict[str, int]:
    names = sorted(set(names))
    existing = dict(Tag.objects.filter(name__in=names).values_list("name", "id"))
    Tag.objects.bulk_create([Tag(name=n) for n in names if n not in existing])
    return dict(Tag.objects.filter(name__in=names).values_list("name", "id"))


def items_tag(*, space: EmbeddingSpace, keys_by_tag: Mapping[str, Collection[str]]) -> int:
    """Add tags to items of ``space`` by key (bulk, idempotent); returns the links added.

    Raises ``ValueError`` naming a key that is not in the space.
    """
    if not keys_by_tag:
        return 0
    tag_ids = _tag_ids(keys_by_tag)
    wanted = set().union(*keys_by_tag.values())
    items = Item.objects.filter(space=space)
    if len(wanted) > BATCH_SIZE:  # one query for the whole space beats many IN lists
        item_ids = dict(items.values_list("key", "id"))
    else:
        item_ids = {}
        for chunk in batched(sorted(wanted), 900):
            item_ids.update(items.filter(key__in=chunk).values_list("key", "id"))
    missing = wanted - item_ids.keys()
    if missing:
        raise ValueError(f"no item {sorted(missing)[0]!r} in space {space.name!r}")
    Through = Item.tags.through
    existing = set(
        Through.objects.filter(item__space=space, tag_id__in=tag_ids.values()).values_list(
            "item_id", "tag_id"
        )
    )
    links = [
        Through(item_id=item_ids[key], tag_id=tag_ids[tag])
        for tag, keys in keys_by_tag.items()
        for key in sorted(set(keys))
        if (item_ids[key], tag_ids[tag]) not in existing
    ]
    Through.objects.bulk_create(links, batch_size=BATCH_SIZE)
    return len(links)


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
) -> EmbeddingSpace:
    """Import an embedding file as a new space; atomic (nothing stored on any error).

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
    with _matrix_file(name) as (relative, target, partial):
        rows = _write_matrix(reader, partial, progress)
        os.replace(partial, target)
        if progress:
            progress("storing", 0, len(rows.keys))
        space = _space_store(
            name=name,
            relative=relative,
            sha256=sha256_file(target),
            rows=rows,
            source=source or f"imported from {Path(path).name} ({reader.format})",
            kind=kind,
            tags=tags,
            item_kinds=item_kinds or {},
            item_tags=item_tags or {},
            progress=progress,
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
) -> EmbeddingSpace:
    space = _space_row_create(
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


def items_vectors(items: Sequence[Item]) -> np.ndarray:
    """The vectors of ``items`` (all of one space) as an (n, d) float64 array, in order.

    One indexed read of the memory-mapped matrix, no query per item.
    """
    if not items:
        raise ValueError("no items")
    space_ids = {item.space_id for item in items}
    if len(space_ids) != 1:
        raise ValueError("items_vectors needs items of one space")
    space = items[0].space
    return space.vectors([item.row for item in items])


def space_from_matrix(
    *,
    name: str,
    matrix: np.ndarray,
    keys: Sequence[str],
    space_kind: str,
    item_kind: str,
    source: str,
    texts: Sequence[str] | None = None,
    payloads: Sequence[dict | None] | None = None,
    feature_map: dict | None = None,
    label_column: str = "",
    hidden_columns: Sequence[str] = (),
    progress: Progress | None = None,
) -> EmbeddingSpace:
    """A new space from an in-memory matrix (records, texts); atomic like :func:`space_import`.

    The matrix is written to media storage first (a ``.part`` file renamed when whole), then
    the space and its items are created in one transaction; on any error the file is removed
    and no row is left. Raises :class:`EmbeddingFormatError` for a bad name or duplicate keys.
    """
    name = space_name_check(name)
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    if matrix.ndim != 2 or matrix.shape[0] != len(keys) or matrix.shape[0] == 0:
        raise EmbeddingFormatError(f"need one vector per item; got {matrix.shape} for {len(keys)}")
    if not np.isfinite(matrix).all():
        raise EmbeddingFormatError("the vectors contain NaN or infinite values")
    seen: set[str] = set()
    for i, key in enumerate(keys):
        if key in seen:
            raise EmbeddingFormatError(f"row {i + 1}: the key {key!r} appears twice")
        seen.add(key)
    with _matrix_file(name) as (relative, target, partial):
        with open(partial, "wb") as f:
            f.write(_npy_header(matrix.shape))
            f.write(matrix.tobytes())
        os.replace(partial, target)
        space = _matrix_space_store(
            name=name,
            relative=relative,
            sha256=sha256_file(target),
            shape=matrix.shape,
            keys=keys,
            texts=texts,
            payloads=payloads,
            space_kind=space_kind,
            item_kind=item_kind,
            source=source,
            feature_map=feature_map,
            label_column=label_column,
            hidden_columns=list(hidden_columns),
            progress=progress,
        )
    return space


@transaction.atomic
def _matrix_space_store(
    *,
    name,
    relative,
    sha256,
    shape,
    keys,
    texts,
    payloads,
    space_kind,
    item_kind,
    source,
    feature_map,
    label_column,
    hidden_columns,
    progress,
) -> EmbeddingSpace:
    space = _space_row_create(
        name=name,
        kind=space_kind,
        dimension=shape[1],
        source=source,
        matrix=relative,
        sha256=sha256,
        item_count=shape[0],
        feature_map=feature_map,
        label_column=label_column,
        hidden_columns=hidden_columns,
    )
    n = len(keys)
    texts = texts if texts is not None else [""] * n
    payloads = payloads if payloads is not None else [None] * n
    items = (
        Item(space=space, key=key, text=text, kind=item_kind, payload=payload, row=i)
        for i, (key, text, payload) in enumerate(zip(keys, texts, payloads, strict=True))
    )
    done = 0
    for batch in batched(items, BATCH_SIZE):
        Item.objects.bulk_create(batch)
        done += len(batch)
        if progress:
            progress("storing", done, n)
    return space
