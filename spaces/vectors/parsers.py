"""Building blocks of the embedding readers: blocks and the parsers of the binary, ``.npy``
(+ vocabulary) and CSV formats (a mixin of :class:`spaces.embeddings.EmbeddingReader`).

Import the public names from :mod:`spaces.embeddings`.
"""

from __future__ import annotations

import csv
import gzip
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from spaces.exceptions import EmbeddingFormatError

FORMATS = ("word2vec", "glove", "word2vec-bin", "npy", "csv")
BLOCK_ROWS = 8192
# Text values are parsed a block at a time; each pending value is a Python string (~60 bytes),
# so text blocks are capped at this many values (~4 MB) rather than at BLOCK_ROWS rows.
TEXT_VALUES_PER_BLOCK = 65536
MAX_KEY_LENGTH = 255  # Item.key's max_length
MAX_KEY_BYTES = 4 * MAX_KEY_LENGTH  # UTF-8: a binary record's key, before decoding
MAX_BLANK_RUN = 1 << 20  # bytes of consecutive blank lines (a file of newlines is no embedding)
_HEADER = re.compile(r"^\s*(\d+)\s+(\d+)\s*$")
_NEWLINES = re.compile(rb"[\r\n]*")


@dataclass(frozen=True)
class Block:
    """Up to ``BLOCK_ROWS`` consecutive vectors with their keys and source positions."""

    keys: list[str]
    vectors: np.ndarray  # (m, d) float32
    lines: list[int]
    payloads: list[dict] | None = None


class PreflightBudgetSpent(Exception):
    """The request's preflight read as much as it may; the rest is the worker's to read."""


_preflight_budget: ContextVar[int | None] = ContextVar("preflight_budget", default=None)


@contextmanager
def preflight_budget(max_bytes: int):
    """Reads opened inside stop with :class:`PreflightBudgetSpent` after ``max_bytes`` (of
    decompressed data): the web request checks the start of a file, never all of it."""
    token = _preflight_budget.set(max_bytes)
    try:
        yield
    finally:
        _preflight_budget.reset(token)


class BoundedFile:
    """A binary file (plain or gzip) read with bounds: at most ``MAX_DECOMPRESSED_MB`` of data
    and lines of at most ``MAX_LINE_KB``, each a clear :class:`EmbeddingFormatError` (a 1 MB
    ``.gz`` of 1 GiB of newlines, or one 256 MiB line, held a web worker or took ~1 GB of
    memory). Iterating yields lines; ``read(n)`` and ``readline(n)`` as a binary file's."""

    def __init__(self, raw, *, compressed: bool) -> None:
        self.raw = raw
        self.compressed = compressed
        self.max_bytes = settings.MAX_DECOMPRESSED_MB * 1024 * 1024
        self.max_line = settings.MAX_LINE_KB * 1024
        self.preflight = _preflight_budget.get()
        self.total = 0
        self.line_no = 0
        self.blank_run = 0

    def _count(self, n: int) -> None:
        self.total += n
        if self.preflight is not None and self.total > self.preflight:
            raise PreflightBudgetSpent
        if self.total > self.max_bytes:
            what = "decompresses to" if self.compressed else "holds"
            raise EmbeddingFormatError(
                f"the file {what} more than {settings.MAX_DECOMPRESSED_MB} MB (MAX_DECOMPRESSED_MB)"
            )

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = self.max_bytes - self.total + 1  # never an unbounded read
        data = self.raw.read(n)
        self._count(len(data))
        return data

    def readline(self, limit: int = -1) -> bytes:
        bounded = limit is None or limit < 0 or limit > self.max_line
        line = self.raw.readline(self.max_line + 1 if bounded else limit)
        self._count(len(line))
        if line:
            self.line_no += 1
        if bounded and len(line) > self.max_line:
            raise EmbeddingFormatError(
                f"a line longer than {settings.MAX_LINE_KB} KB (MAX_LINE_KB)", line=self.line_no
            )
        self.blank_run = self.blank_run + len(line) if line and not line.strip() else 0
        if self.blank_run > MAX_BLANK_RUN:
            raise EmbeddingFormatError(
                f"more than {MAX_BLANK_RUN // 1024 // 1024} MB of blank lines in a row",
                line=self.line_no,
            )
        return line

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> BoundedFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open_binary(path: Path) -> BoundedFile:
    if path.suffix == ".gz":
        return BoundedFile(gzip.open(path, "rb"), compressed=True)
    return BoundedFile(open(path, "rb"), compressed=False)


def _decode(raw: bytes, line: int, unit: str = "line") -> str:
    try:
        text = raw.decode("utf-8")
        return text.removeprefix("\ufeff") if line == 1 else text  # a byte-order mark
    except UnicodeDecodeError as exc:
        raise EmbeddingFormatError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            line=line,
            unit=unit,
        ) from None


class FormatParsers:
    """word2vec binary, .npy + vocabulary and CSV parsing for ``EmbeddingReader``.

    Uses the reader's ``path``, ``limit``, ``vocab``/``vectors``/``key_column``/``fields``,
    sets ``expected_rows`` and ``dimension_hint``, and turns text values into blocks with
    ``_block``.
    """

    def _binary(self) -> Iterator[Block]:
        with _open_binary(self.path) as f:
            header = _decode(f.readline(256), 1, "record")
            match = _HEADER.match(header)
            if not match:
                raise EmbeddingFormatError(
                    "expected the word2vec header '<count> <dimension>'", line=1
                )
            announced, d = int(match[1]), int(match[2])
            if announced < 1 or d < 1:
                raise EmbeddingFormatError("the header announces no vectors", line=1)
            self.expected_rows = min(announced, self.limit or announced)
            scanner = _Scanner(f)
            total = self.expected_rows
            keys: list[str] = []
            vecs: list[bytes] = []
            nums: list[int] = []
            for record in range(1, total + 1):
                raw_key = scanner.until_space()
                if raw_key is None:
                    raise EmbeddingFormatError(
                        f"the file ends after {record - 1} of the {announced} vectors the "
                        f"header announces",
                        line=record,
                        unit="record",
                    )
                key = _decode(raw_key, record, "record")
                data = scanner.take(4 * d)
                if len(data) < 4 * d:
                    raise EmbeddingFormatError(
                        f"the file ends inside the vector of {key[:40]!r}",
                        line=record,
                        unit="record",
                    )
                keys.append(key)
                vecs.append(data)
                nums.append(record)
                if len(keys) == BLOCK_ROWS or record == total:
                    matrix = np.frombuffer(b"".join(vecs), dtype="<f4").reshape(len(keys), d)
                    yield Block(keys, matrix.astype(np.float32), nums)
                    keys, vecs, nums = [], [], []
            if total == announced and scanner.rest().strip():
                raise EmbeddingFormatError(
                    f"data after the {announced} vectors the header announces",
                    line=announced + 1,
                    unit="record",
                )

    # --- .npy matrix + vocabulary -------------------------------------------------------------

    def _load_matrix(self, matrix_path: Path) -> np.ndarray:
        try:
            matrix = np.load(matrix_path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise EmbeddingFormatError(
                f"{matrix_path.name} is not a readable .npy file ({exc})"
            ) from None
        if not isinstance(matrix, np.ndarray) or matrix.ndim != 2:
            raise EmbeddingFormatError(
                f"{matrix_path.name} must be a 2-D matrix (rows x dimension)"
            )
        if matrix.dtype.kind not in "fiu":
            raise EmbeddingFormatError(f"{matrix_path.name} holds {matrix.dtype}, not numbers")
        if matrix.shape[0] == 0 or matrix.shape[1] == 0:
            raise EmbeddingFormatError(f"{matrix_path.name} holds no vectors")
        self.dimension_hint = matrix.shape[1]
        self.expected_rows = min(matrix.shape[0], self.limit or matrix.shape[0])
        return matrix

    def _vocab_keys(self) -> list[str]:
        if self._vocab_file.suffix == ".parquet":
            keys = _parquet_keys(self._vocab_file)
        else:
            keys = []
            with _open_binary(self._vocab_file) as f:
                for line_no, raw in enumerate(f, start=1):
                    keys.append(_decode(raw, line_no).strip())
        if keys and keys[-1] == "" and len(keys) == self._matrix.shape[0] + 1:
            keys.pop()  # a final empty line
        if len(keys) != self._matrix.shape[0]:
            raise EmbeddingFormatError(
                f"the vocabulary has {len(keys)} lines but the matrix has "
                f"{self._matrix.shape[0]} rows"
            )
        return keys

    def _npy(self) -> Iterator[Block]:
        keys = self._vocab_keys()
        n = min(len(keys), self.limit or len(keys))
        for start in range(0, n, BLOCK_ROWS):
            stop = min(n, start + BLOCK_ROWS)
            with np.errstate(over="ignore"):
                block = np.asarray(self._matrix[start:stop], dtype=np.float32)
            yield Block(keys[start:stop], block, list(range(start + 1, stop + 1)))

    # --- CSV ----------------------------------------------------------------------------------

    def _csv(self) -> Iterator[Block]:
        delimiter = "\t" if self.path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
        with _open_binary(self.path) as f:
            decoded = (_decode(raw, n) for n, raw in enumerate(f, start=1))
            reader = csv.reader(decoded, delimiter=delimiter)
            header = next(reader, None)
            if not header or not any(h.strip() for h in header):
                raise EmbeddingFormatError("the file is empty (a header row is expected)", line=1)
            header = [h.strip() for h in header]
            col = self._csv_key_index(header)
            unknown = [name for name in self.fields if name not in header]
            if unknown:
                raise EmbeddingFormatError(f"no column named {unknown[0]!r} in the header", line=1)
            if self.vectors:
                yield from self._csv_with_matrix(reader, header, col)
                return
            field_idx = [header.index(name) for name in self.fields]
            vec_idx = [i for i in range(len(header)) if i != col and i not in field_idx]
            if not vec_idx:
                raise EmbeddingFormatError("no vector columns besides the key", line=1)
            self.dimension_hint = len(vec_idx)
            keys, flat, lines, payloads = [], [], [], []
            count = 0
            for row in reader:
                line = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise EmbeddingFormatError(
                        f"{len(row)} columns, expected {len(header)} like the header", line=line
                    )
                keys.append(row[col].strip())
                flat.extend(row[i] for i in vec_idx)
                lines.append(line)
                payloads.append({header[i]: row[i] for i in field_idx})
                count += 1
                if self.limit is not None and count >= self.limit:
                    break
                if len(flat) >= TEXT_VALUES_PER_BLOCK or len(keys) == BLOCK_ROWS:
                    yield self._block(keys, flat, lines, payloads if field_idx else None)
                    keys, flat, lines, payloads = [], [], [], []
            if keys:
                yield self._block(keys, flat, lines, payloads if field_idx else None)

    def _csv_key_index(self, header: list[str]) -> int:
        if self.key_column:
            if self.key_column not in header:
                raise EmbeddingFormatError(
                    f"no key column {self.key_column!r} in the header", line=1
                )
            return header.index(self.key_column)
        return header.index("key") if "key" in header else 0

    def _csv_with_matrix(self, reader, header: list[str], col: int) -> Iterator[Block]:
        matrix = self._load_matrix(self.vectors)
        fields = self.fields or [h for i, h in enumerate(header) if i != col]
        field_idx = [header.index(name) for name in fields]
        rows: list[tuple[str, dict, int]] = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise EmbeddingFormatError(
                    f"{len(row)} columns, expected {len(header)} like the header",
                    line=reader.line_num,
                )
            rows.append((row[col].strip(), {header[i]: row[i] for i in field_idx}, reader.line_num))
        if len(rows) != matrix.shape[0]:
            raise EmbeddingFormatError(
                f"the CSV has {len(rows)} data rows but {self.vectors.name} has "
                f"{matrix.shape[0]} rows (one vector per data row is expected)"
            )
        n = min(len(rows), self.limit or len(rows))
        self.expected_rows = n
        for start in range(0, n, BLOCK_ROWS):
            part = rows[start : start + BLOCK_ROWS]
            with np.errstate(over="ignore"):
                block = np.asarray(matrix[start : start + len(part)], dtype=np.float32)
            yield Block([r[0] for r in part], block, [r[2] for r in part], [r[1] for r in part])


def _parquet_keys(path: Path) -> list[str]:
    """Keys from a parquet vocabulary: its one string column (row i = key of matrix row i).

    A table with several columns needs one named ``key``, ``index`` or ``word``. Errors name
    the row (``line`` = row number, 1-based) like a text vocabulary's line.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise EmbeddingFormatError(f"{path.name} is not a readable parquet file ({exc})") from None
    names = [n for n in table.column_names if not n.startswith("__")]
    column = (
        names[0]
        if len(names) == 1
        else next((n for n in ("key", "index", "word") if n in names), None)
    )
    if column is None or not pa.types.is_string(table.schema.field(column).type):
        raise EmbeddingFormatError(
            f"{path.name}: a parquet vocabulary needs one string column (or one named key, "
            f"index or word)"
        )
    keys = table.column(column).to_pylist()
    if None in keys:
        raise EmbeddingFormatError("empty key", line=keys.index(None) + 1)
    return [key.strip() for key in keys]


class _Scanner:
    """Buffered reads of a binary stream: up to a space, or a fixed number of bytes."""

    def __init__(self, f, chunk: int = 1 << 20):
        self.f, self.chunk, self.buf, self.pos = f, chunk, b"", 0

    def _fill(self) -> bool:
        more = self.f.read(self.chunk)
        if not more:
            return False
        self.buf = self.buf[self.pos :] + more
        self.pos = 0
        return True

    def until_space(self) -> bytes | None:
        """The next key: skips leading newlines, reads up to (not including) a space."""
        skipped = 0
        while True:
            newlines = _NEWLINES.match(self.buf, self.pos).end() - self.pos
            self.pos += newlines
            skipped += newlines
            if skipped > MAX_BLANK_RUN:
                raise EmbeddingFormatError(
                    f"more than {MAX_BLANK_RUN // 1024 // 1024} MB of blank lines in a row"
                )
            end = self.buf.find(b" ", self.pos)
            if end >= 0 and self.pos < len(self.buf):
                key = self.buf[self.pos : end]
                self.pos = end + 1
                return key
            if len(self.buf) - self.pos > MAX_KEY_BYTES:
                raise EmbeddingFormatError(f"a key longer than {MAX_KEY_BYTES} bytes")
            if not self._fill():
                return None

    def take(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n and self._fill():
            pass
        data = self.buf[self.pos : self.pos + n]
        self.pos += len(data)
        return data

    def rest(self) -> bytes:
        data = self.buf[self.pos :] + self.f.read()
        self.pos = len(self.buf)
        return data
