"""The parts of a space every kind shares: a matrix in media storage, the space's row, items.

``space_from_matrix`` makes a space from an in-memory matrix (records and texts); the
streamed import of an embedding file (``spaces.vectors.importing.space_import``) builds on the
same steps: a new ``.npy`` in media storage whose files go on any error (:func:`matrix_file`,
:func:`npy_header`), the space's row (:func:`space_row_create`, a taken name a clear error), its
items in batches and their tags (:func:`items_tag`), all in one transaction. ``items_vectors``
reads the vectors of items back.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from common import storage
from common.iterables import batched
from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item, Tag

BATCH_SIZE = 5000
MAX_KEY = 255  # Item.key's max_length
NPY_HEADER_BYTES = 128  # fixed, so the real shape can be written once all rows are in

# progress(stage, done, total): stage is "reading" (rows read) or "storing" (items saved).
Progress = Callable[[str, int, int | None], None]


class MatrixFile:
    """A new matrix: written to a local work file (``partial``), then put into media storage
    under ``name`` by :meth:`store` (which returns its sha256)."""

    def __init__(self, name: str, partial: Path):
        self.name, self.partial, self.stored = name, partial, False

    def store(self) -> str:
        sha256 = sha256_file(self.partial)
        storage.store_path(self.partial, self.name)
        self.stored = True
        return sha256


@contextlib.contextmanager
def matrix_file(name: str):
    """A :class:`MatrixFile` for a new matrix in media storage (``spaces/<slug>-<random>.npy``);
    on any error inside the block the work file and the stored file are removed."""
    relative = f"spaces/{slugify(name)[:60] or 'space'}-{uuid.uuid4().hex[:8]}.npy"
    with storage.work_folder("matrix-") as folder:
        matrix = MatrixFile(relative, folder / (Path(relative).name + ".part"))
        try:
            yield matrix
        except BaseException:
            if matrix.stored:
                default_storage.delete(relative)
            raise


def npy_header(shape: tuple[int, int]) -> bytes:
    """A version-1.0 ``.npy`` header for little-endian float32, padded to a fixed length."""
    text = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({shape[0]}, {shape[1]}), }}"
    body_len = NPY_HEADER_BYTES - 10  # magic (6) + version (2) + header length (2)
    body = text.ljust(body_len - 1) + "\n"
    if len(body) != body_len:
        raise ValueError(f"matrix shape {shape} does not fit the .npy header")
    return b"\x93NUMPY\x01\x00" + body_len.to_bytes(2, "little") + body.encode("latin1")


def npy_sha256(matrix: np.ndarray) -> str:
    """The sha256 a float32 matrix gets once stored (:func:`space_from_matrix`, or
    :func:`spaces.vectors.importing.space_import`): to recognise a stored space."""
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    digest = hashlib.sha256(npy_header(matrix.shape))
    digest.update(matrix.tobytes())
    return digest.hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while data := f.read(chunk):
            digest.update(data)
    return digest.hexdigest()


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


def space_row_create(**fields) -> EmbeddingSpace:
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
    owner=None,
) -> EmbeddingSpace:
    """A new space from an in-memory matrix (records, texts); atomic (nothing stored on error).
    ``owner``: who may use it besides staff (``spaces.sharing``; None: staff only).

    The matrix is written to media storage first (a local work file stored when whole), then
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
    with matrix_file(name) as stored:
        with open(stored.partial, "wb") as f:
            f.write(npy_header(matrix.shape))
            f.write(matrix.tobytes())
        sha256 = stored.store()
        space = _matrix_space_store(
            name=name,
            relative=stored.name,
            sha256=sha256,
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
            owner=owner,
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
    owner,
) -> EmbeddingSpace:
    space = space_row_create(
        owner=owner,
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
