"""Bounded reading of embedding files: :class:`BoundedFile` (plain or gzip, at most
``MAX_DECOMPRESSED_MB`` of data, lines of at most ``MAX_LINE_KB``), UTF-8 decoding that names
the line, and the preflight budget that stops a web request's read after the first block."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from django.conf import settings

from spaces.exceptions import EmbeddingFormatError
from spaces.vectors.formats import MAX_BLANK_RUN


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


def open_bounded(path: Path) -> BoundedFile:
    """``path`` opened for bounded binary reading (gzip-decompressed when it ends in .gz)."""
    if path.suffix == ".gz":
        return BoundedFile(gzip.open(path, "rb"), compressed=True)
    return BoundedFile(open(path, "rb"), compressed=False)


def decode_utf8(raw: bytes, line: int, unit: str = "line") -> str:
    """``raw`` as UTF-8 text (a byte-order mark dropped on line 1); an error names the line."""
    try:
        text = raw.decode("utf-8")
        return text.removeprefix("\ufeff") if line == 1 else text  # a byte-order mark
    except UnicodeDecodeError as exc:
        raise EmbeddingFormatError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            line=line,
            unit=unit,
        ) from None
