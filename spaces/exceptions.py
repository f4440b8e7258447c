"""Errors about input files.

``InputFileError`` is the base of every "this file cannot be read" error, here and in the
apps above (``annotation``'s feedback import subclasses it), so commands and pages catch one
type; it lives in this lowest app so that every app can import it.
"""

from __future__ import annotations


class InputFileError(ValueError):
    """Bad input file; ``line`` is where (1-based) when it applies, ``unit`` what it counts."""

    def __init__(self, message: str, *, line: int | None = None, unit: str = "line"):
        self.message = message
        self.line = line
        self.unit = unit
        super().__init__(f"{unit} {line}: {message}" if line is not None else message)


class EmbeddingFormatError(InputFileError):
    """An embedding file that cannot be imported."""
