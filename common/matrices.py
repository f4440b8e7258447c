"""Reading a space's ``.npy`` matrix from media storage without loading it whole.

Local media: the file is memory-mapped, as it always was. Object storage (S3):

* :func:`matrix_rows` — the rows asked for only: the header once (one ranged read, kept per
  file), then the rows grouped into runs of neighbouring rows, one ranged GET per run (eight
  in flight at once); when
  the rows are many (more runs than :data:`MAX_RUNS`) or a local copy is there already, the
  local copy below instead;
* :func:`matrix_load` — the whole matrix memory-mapped from a local copy kept by sha256
  (``common.storage.cached_copy``: streamed to disk once per worker, pruned when old), never a
  copy in memory unless asked (``mmap=False``).

Memory stays bounded by what is asked for (the rows) plus one run at a time:
``benchmarks/storage_matrix.py`` measures it on a real S3-compatible store.
"""

from __future__ import annotations

import ast
import functools
import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from django.conf import settings

from common import storage

HEADER_PROBE = 4096  # bytes read for the header (ours take 128)
MAX_RUNS = 256  # more runs of rows than this: read from the local copy
GAP_ROWS = 8  # rows closer than this are read in one run (the rows between discarded)
THREADS = 8  # ranged GETs in flight at once


@functools.lru_cache(maxsize=256)
def _layout(name: str, sha256: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """(dtype, shape, data offset) of a stored ``.npy``, from its first bytes."""
    head = storage.read_range(name, 0, HEADER_PROBE)
    buffer = io.BytesIO(head)
    version = np.lib.format.read_magic(buffer)
    if version == (1, 0):
        length = int.from_bytes(head[8:10], "little")
        start = 10
    else:
        length = int.from_bytes(head[8:12], "little")
        start = 12
    if start + length > len(head):
        head = storage.read_range(name, 0, start + length)
    header = ast.literal_eval(head[start : start + length].decode("latin1"))
    if header["fortran_order"]:
        raise ValueError(f"{name}: a Fortran-ordered matrix cannot be read by rows")
    return np.dtype(header["descr"]), tuple(header["shape"]), start + length


def _cached_locally(name: str, sha256: str) -> Path | None:
    path = Path(settings.STORAGE_CACHE_DIR) / f"{sha256}{Path(name).suffix}"
    return path if path.exists() else None


def matrix_load(name: str, sha256: str, *, mmap: bool = True) -> np.ndarray:
    """The whole matrix (n, d), memory-mapped read-only by default (a local copy on S3)."""
    return np.load(storage.cached_copy(name, sha256), mmap_mode="r" if mmap else None)


def _runs(rows: np.ndarray) -> list[tuple[int, int]]:
    """Sorted unique rows as half-open runs ``[first, last + 1)``, neighbours merged."""
    runs: list[tuple[int, int]] = []
    for row in rows.tolist():
        if runs and row - runs[-1][1] < GAP_ROWS:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs


def matrix_rows(name: str, sha256: str, rows) -> np.ndarray:
    """The given rows as float64 (len(rows), d), in the given order."""
    rows = np.asarray(rows, dtype=np.int64)
    if storage.is_local() or _cached_locally(name, sha256) is not None:
        return _mapped_rows(matrix_load(name, sha256), rows)
    dtype, shape, offset = _layout(name, sha256)
    if len(shape) != 2:
        raise ValueError(f"{name}: not a matrix (shape {shape})")
    if rows.size == 0:
        return np.empty((0, shape[1]))
    if rows.min() < 0 or rows.max() >= shape[0]:
        raise IndexError(f"row out of range for a matrix of {shape[0]} rows")
    unique = np.unique(rows)
    runs = _runs(unique)
    if len(runs) > MAX_RUNS:
        return _mapped_rows(matrix_load(name, sha256), rows)
    row_bytes = dtype.itemsize * shape[1]
    found = np.empty((unique.size, shape[1]), dtype=np.float64)
    done = 0

    reader = storage.range_reader(name)

    def read(run: tuple[int, int]) -> bytes:
        return reader(offset + run[0] * row_bytes, offset + run[1] * row_bytes)

    with ThreadPoolExecutor(max_workers=min(THREADS, len(runs))) as pool:
        blocks = list(pool.map(read, runs))  # at most the rows asked for (and short gaps)
    for (first, stop), data in zip(runs, blocks, strict=True):
        block = np.frombuffer(data, dtype=dtype).reshape(stop - first, shape[1])
        wanted = unique[done:][: np.searchsorted(unique[done:], stop)]
        found[done : done + wanted.size] = block[wanted - first]
        done += wanted.size
    return found[np.searchsorted(unique, rows)]


def _mapped_rows(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    if rows.size == 0:
        return np.empty((0, matrix.shape[1]))
    # Fancy indexing on a memmap reads only the pages the rows live on.
    order = np.argsort(rows, kind="stable")
    out = np.empty((rows.size, matrix.shape[1]), dtype=np.float64)
    out[order] = matrix[rows[order]]
    return out
