"""How each embedding format becomes blocks of vectors: the parsers of word2vec and GloVe
text, word2vec binary, ``.npy`` (+ vocabulary) and CSV, a mixin of
:class:`spaces.vectors.reader.EmbeddingReader` (which validates what they yield).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from common.text import without_paths
from spaces.exceptions import EmbeddingFormatError
from spaces.vectors.bounded import decode_utf8, open_bounded
from spaces.vectors.formats import (
    BLOCK_ROWS,
    HEADER,
    MAX_BLANK_RUN,
    MAX_KEY_BYTES,
    TEXT_VALUES_PER_BLOCK,
    Block,
)

_NEWLINES = re.compile(rb"[\r\n]*")


class FormatParsers:
    """One parser per format family for ``EmbeddingReader``.

    Uses the reader's ``path``, ``format``, ``limit``, ``vocab``/``vectors``/``key_column``/
    ``fields``, sets ``expected_rows`` and ``dimension_hint``, and turns text values into blocks
    with ``_block``.
    """

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
        with open_bounded(self.path) as f:
            for line_no, raw in enumerate(f, start=1):
                text = decode_utf8(raw, line_no).rstrip("\r\n")
                if not text.strip():
                    continue
                if self.format == "word2vec" and announced is None:
                    match = HEADER.match(text)
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
        with open_bounded(self.path) as f:
            header = decode_utf8(f.readline(256), 1, "record")
            match = HEADER.match(header)
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
                key = decode_utf8(raw_key, record, "record")
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
            keys = _parquet_keys(self._vocab_file, self._matrix.shape[0])
        else:
            keys = []
            with open_bounded(self._vocab_file) as f:
                for line_no, raw in enumerate(f, start=1):
                    keys.append(decode_utf8(raw, line_no).strip())
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
        """The CSV's blocks; csv's errors (a field over 128 KB, a NUL) with their line."""
        self._csv_line = 0
        try:
            yield from self._csv_blocks()
        except csv.Error as exc:
            raise EmbeddingFormatError(f"malformed CSV ({exc})", line=self._csv_line) from None

    def _csv_blocks(self) -> Iterator[Block]:
        delimiter = "\t" if self.path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
        with open_bounded(self.path) as f:
            decoded = (self._csv_decoded(raw, n) for n, raw in enumerate(f, start=1))
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

    def _csv_decoded(self, raw: bytes, number: int) -> str:
        self._csv_line = number
        return decode_utf8(raw, number)

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


def _parquet_keys(path: Path, rows: int) -> list[str]:
    """Keys from a parquet vocabulary: its one string column (row i = key of matrix row i).

    A table with several columns needs one named ``key``, ``index`` or ``word``. Errors name
    the row (``line`` = row number, 1-based) like a text vocabulary's line. The footer's row
    count must be the matrix's ``rows`` before anything is decoded.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        declared = pq.ParquetFile(path).metadata.num_rows
        if declared != rows:
            raise EmbeddingFormatError(
                f"the vocabulary has {declared} rows but the matrix has {rows} rows"
            )
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        reason = without_paths(str(exc))[:200]
        raise EmbeddingFormatError(
            f"{path.name} is not a readable parquet file ({reason})"
        ) from None
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
    try:
        table.column(column).validate(full=True)
    except pa.ArrowInvalid:
        raise EmbeddingFormatError(f"{path.name}: the keys are not UTF-8 text") from None
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
