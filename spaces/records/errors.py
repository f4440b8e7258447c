"""The error of a column choice the table contradicts."""

from __future__ import annotations

from spaces.exceptions import EmbeddingFormatError


class ColumnChoiceError(EmbeddingFormatError):
    """The chosen columns do not fit the table (a text value in a numeric column, a key that
    is empty or repeated, too many categories): the upload goes back to its columns page with
    this message, rather than failing."""
