"""Text every database can store and every reader can see.

:func:`text_problem` — NUL (PostgreSQL refuses it) and lone UTF-16 surrogates (valid JSON
escapes that no UTF-8 database stores). :func:`invisible` — a name made only of characters that
render as nothing: whitespace, zero-width characters and the bidirectional controls (a group
"named" U+202E would look empty and reverse the text after it).
"""

from __future__ import annotations

import unicodedata

# Format characters (Cf: zero-width space/joiners, bidi embeddings, overrides and isolates,
# word joiner, BOM, …) and the invisible separators/fillers outside Cf.
_INVISIBLE_EXTRA = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f"}


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode text (lone surrogate)"
    return None


def invisible(value: str) -> bool:
    """True when ``value`` has no visible character at all."""
    return all(
        char.isspace()
        or unicodedata.category(char) in {"Cf", "Cc", "Zs", "Zl", "Zp"}
        or char in _INVISIBLE_EXTRA
        for char in value
    )
