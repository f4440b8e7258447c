"""Streaming readers for embedding files that validate as they read.

Formats (``FORMATS``):

``word2vec``
    text; a header line ``<count> <dimension>``, then one ``<key> <v1> ... <vd>`` per line.
``glove``
    text without a header; the dimension is taken from the first line.
``word2vec-bin``
    the binary word2vec format: the same header line, then per vector ``<key> `` followed by
    ``d`` little-endian float32 values (and optionally a newline).
``npy``
    a 2-D numeric ``.npy`` matrix plus a vocabulary file with one key per line (line i = row i).
``csv``
    a header row and a key column (``key`` if present, else the first column). Either the other
    columns are the vector (numbers), with ``fields`` naming columns kept as the record's payload
    instead; or a separate ``.npy`` matrix (``vectors``) holds one row per data row and every
    other column is a record field shown to annotators.

Text files may be gzip-compressed (``.gz``). Readers never hold the file in memory: they yield
:class:`Block` objects of at most ``BLOCK_ROWS`` rows (float32).

Validation, each failure an :class:`EmbeddingFormatError` carrying the line (or record) number:
undecodable bytes (UTF-8 is required), a missing or bad header, wrong or mixed dimensions,
values that are not numbers, NaN or infinity (also values beyond float32's range), empty keys,
keys longer than ``MAX_KEY_LENGTH``, an empty file, and an unknown format.

Duplicate keys: **the import is rejected**, naming both line numbers. Keys are taken verbatim
(case-sensitive); blank lines in text files are skipped.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMATS = ("word2vec", "glove", "word2vec-bin", "npy", "csv")
BLOCK_ROWS = 8192
# Text values are parsed a block at a time; each pending value is a Python string (~60 bytes),
# so text blocks are capped at this many values (~4 MB) rather than at BLOCK_ROWS rows.
TEXT_VALUES_PER_BLOCK = 65536
MAX_KEY_LENGTH = 255  # Item.key's max_length
_HEADER = re.compile(r"^\s*(\d+)\s+(\d+)\s*$")


class InputFileError(ValueError):
    """Bad input file; ``line`` is where (1-based) when it applies, ``unit`` what it counts."""

    def __init__(self, message: str, *, line: int | None = None, unit: str = "line"):
        self.message = message
        self.line = line
        self.unit = unit
        super().__init__(f"{unit} {line}: {message}" if line is not None else message)


class EmbeddingFormatError(InputFileError):
    """An embedding file that cannot be imported."""


@dataclass(frozen=True)
class Block:
    """Up to ``BLOCK_ROWS`` consecutive vectors with their keys and source positions."""

    keys: list[str]
    vectors: np.ndarray  # (m, d) float32
    lines: list[int]
    payloads: list[dict] | None = None


def _open_binary(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _decode(raw: bytes, line: int, unit: str = "line") -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EmbeddingFormatError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            line=line,
            unit=unit,
        ) from None


def detect_format(path: Path) -> str:
    """Guess the format from the extension, else from the first line."""
    name = path.name.lower().removesuffix(".gz")
    for suffix, fmt in (
        (".npy", "npy"),
        (".csv", "csv"),
        (".tsv", "csv"),
        (".bin", "word2vec-bin"),
    ):
        if name.endswith(suffix):
            return fmt
    with _open_binary(path) as f:
        first = f.readline(1 << 16)
        while first and not first.strip():
            first = f.readline(1 << 16)
        second = f.read(256)
    if not first.strip():
        raise EmbeddingFormatError("the file holds no vectors (it is empty)")
    text = first.decode("utf-8", errors="replace")
    if "\ufffd" in text and not name.endswith((".txt", ".vec")):
        raise EmbeddingFormatError(
            f"cannot tell the format of {path.name}: not UTF-8 text; pass --format"
        )
    if _HEADER.match(text):
        try:  # an incremental decoder tolerates a character cut at the chunk's end
            codecs.getincrementaldecoder("utf-8")().decode(second, final=False)
        except UnicodeDecodeError:
            return "word2vec-bin"
        return "word2vec"
    return "glove"


class EmbeddingReader:
    """Iterate over validated blocks of an embedding file.

    ``dimension`` and ``expected_rows`` (a count for progress bars, or None when the file does
    not say) are known after construction for formats with a header, else after the first block.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        fmt: str = "auto",
        limit: int | None = None,
        vocab: str | Path | None = None,
        vectors: str | Path | None = None,
        key_column: str | None = None,
        fields: list[str] | None = None,
    ):
        self.path = Path(path)
        if not self.path.is_file():
            raise EmbeddingFormatError(f"no such file: {self.path}")
        if limit is not None and limit < 1:
            raise EmbeddingFormatError(f"--limit must be at least 1, got {limit}")
        self.format = detect_format(self.path) if fmt == "auto" else fmt
        if self.format not in FORMATS:
            raise EmbeddingFormatError(
                f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)} (or auto)"
            )
        self.limit = limit
        self.vocab = Path(vocab) if vocab else None
        self.vectors = Path(vectors) if vectors else None
        self.key_column = key_column
        self.fields = list(fields or [])
        self.dimension: int | None = None
        self.dimension_hint = 0  # the dimension the parser expects (before validation)
        self.expected_rows: int | None = limit
        self.unit = "record" if self.format == "word2vec-bin" else "line"
        self._seen: dict[str, int] = {}
        if self.format == "npy":
            self._vocab_file = self.vocab_path()
            self._matrix = self._load_matrix(self.path)

    def vocab_path(self) -> Path:
        if self.vocab:
            return self.vocab
        for candidate in (self.path.with_suffix(".vocab"), self.path.with_suffix(".txt")):
            if candidate.is_file():
                return candidate
        raise EmbeddingFormatError(
            f"an .npy matrix needs a vocabulary file (one key per line): pass --vocab, or put "
            f"it next to the matrix as {self.path.with_suffix('.vocab').name}"
        )

    def __iter__(self) -> Iterator[Block]:
        readers = {
            "word2vec": self._text,
            "glove": self._text,
            "word2vec-bin": self._binary,
            "npy": self._npy,
            "csv": self._csv,
        }
        rows = 0
        for block in readers[self.format]():
            if self.limit is not None and rows + len(block.keys) > self.limit:
                keep = self.limit - rows
                block = Block(
                    block.keys[:keep],
                    block.vectors[:keep],
                    block.lines[:keep],
                    block.payloads[:keep] if block.payloads is not None else None,
                )
            self._check(block)
            rows += len(block.keys)
            yield block
            if self.limit is not None and rows >= self.limit:
                return
        if rows == 0:
            raise EmbeddingFormatError("the file holds no vectors")

    # --- shared validation -------------------------------------------------------------------

    def _check(self, block: Block) -> None:
        if self.dimension is None:
            self.dimension = block.vectors.shape[1]
        finite = np.isfinite(block.vectors).all(axis=1)
        if not finite.all():
            raise EmbeddingFormatError(
                "a value is not finite (NaN, infinity, or beyond float32's range)",
                line=block.lines[int(np.argmin(finite))],
                unit=self.unit,
            )
        seen = self._seen
        for key, line in zip(block.keys, block.lines, strict=True):
            if not key:
                raise EmbeddingFormatError("empty key", line=line, unit=self.unit)
            if len(key) > MAX_KEY_LENGTH:
                raise EmbeddingFormatError(
                    f"key longer than {MAX_KEY_LENGTH} characters", line=line, unit=self.unit
                )
            first = seen.setdefault(key, line)
            if first != line:
                raise EmbeddingFormatError(
                    f"duplicate key {key!r}, first seen at {self.unit} {first} "
                    f"(duplicates are rejected)",
                    line=line,
                    unit=self.unit,
                )

    def _block(self, keys, flat, lines, payloads=None) -> Block:
        """Turn collected text values into a float32 block, pinning a bad token to its line."""
        try:
            with np.errstate(over="ignore"):
                values = np.array(flat, dtype=np.float32)
        except ValueError:
            d = self.dimension_hint
            for i, line in enumerate(lines):
                for token in flat[i * d : (i + 1) * d]:
                    try:
                        float(token)
                    except ValueError:
                        raise EmbeddingFormatError(
                            f"{token[:40]!r} is not a number", line=line
                        ) from None
            raise
        return Block(keys, values.reshape(len(keys), self.dimension_hint), lines, payloads)

    # --- text: word2vec (header) and GloVe (no header) ---------------------------------------

    def _text(self) -> Iterator[Block]:
        d: int | None = None
        dim_line = 0
        announced: int | None = None
        keys: list[str] = []
        flat: list[str] = []
        lines: list[int] = []
        count = 0
        with _open_binary(self.path) as f:
            for line_no, raw in enumerate(f, start=1):
                text = _decode(raw, line_no).rstrip("\r\n")
                if not text.strip():
                    continue
                if self.format == "word2vec" and announced is None:
                    match = _HEADER.match(text)
                    if not match:
                        raise EmbeddingFormatError(
                            "expected the word2vec header '<count> <dimension>' (a file "
                            "without a header is --format glove)",
                            line=line_no,
                        )
                    announced, d = int(match[1]), int(match[2])
                    if announced < 1 or d < 1:
                        raise EmbeddingFormatError("the header announces no vectors", line=line_no)
                    dim_line = line_no
                    self.dimension_hint = d
                    self.expected_rows = min(announced, self.limit or announced)
                    continue
                key, _, rest = text.partition(" ")
                values = rest.split()
                if d is None:
                    if not values:
                        raise EmbeddingFormatError("no vector values after the key", line=line_no)
                    d, dim_line = len(values), line_no
                    self.dimension_hint = d
                elif len(values) != d:
                    raise EmbeddingFormatError(
                        f"{len(values)} values, expected {d} (the dimension set at line "
                        f"{dim_line})",
                        line=line_no,
                    )
                count += 1
                if announced is not None and count > announced:
                    raise EmbeddingFormatError(
                        f"more vectors than the {announced} the header announces", line=line_no
                    )
                keys.append(key)
                flat.extend(values)
                lines.append(line_no)
                if self.limit is not None and count >= self.limit:
                    break
                if len(flat) >= TEXT_VALUES_PER_BLOCK or len(keys) == BLOCK_ROWS:
                    yield self._block(keys, flat, lines)
                    keys, flat, lines = [], [], []
        if keys:
            yield self._block(keys, flat, lines)
        if announced is not None and count < announced and count != self.limit:
            raise EmbeddingFormatError(
                f"the header announces {announced} vectors but the file holds {count}", line=1
            )

    # --- word2vec binary ----------------------------------------------------------------------

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
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in b"\n\r":
                self.pos += 1
            end = self.buf.find(b" ", self.pos)
            if end >= 0 and self.pos < len(self.buf):
                key = self.buf[self.pos : end]
                self.pos = end + 1
                return key
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
