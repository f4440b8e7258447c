"""Text every database can store and every reader can see.

:func:`text_problem` — NUL (PostgreSQL refuses it) and lone UTF-16 surrogates (valid JSON
escapes that no UTF-8 database stores): the one guard of form input, JSON bodies and the text
read from uploaded files (:func:`bytes_text` decodes a file's bytes and applies it).
:func:`invisible` — a name made only of characters that render as nothing: whitespace, zero-width
characters and the bidirectional controls (a group "named" U+202E would look empty and reverse
the text after it). :func:`without_paths` — a message with the server's file paths cut to their
last part, for messages people read.
"""

from __future__ import annotations

import re
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


def bytes_text(raw: bytes) -> tuple[str | None, str | None]:
    """``(text, None)`` for UTF-8 bytes that pass :func:`text_problem`, else ``(None, why)``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 (byte 0x{raw[exc.start]:02x} at position {exc.start + 1})"
    problem = text_problem(text)
    return (None, problem) if problem else (text, None)


# An absolute POSIX path (two parts at least) inside a message: '/srv/media/uploads/ab/t.pq'.
_PATH = re.compile(r"(?<![\w.~-])/(?:[^\s/'\"():,;]+/)+([^\s/'\"():,;]+)")


def without_paths(message: str) -> str:
    """``message`` with each absolute file path cut to its last part (the file's own name):
    errors of libraries (pyarrow, OSError) name the server's paths, which nobody outside needs."""
    return _PATH.sub(lambda m: m.group(1), message)


def invisible(value: str) -> bool:
    """True when ``value`` has no visible character at all."""
    return all(
        char.isspace()
        or unicodedata.category(char) in {"Cf", "Cc", "Zs", "Zl", "Zp"}
        or char in _INVISIBLE_EXTRA
        for char in value
    )
