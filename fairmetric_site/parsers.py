"""The API's JSON parser: DRF's, strict about what no endpoint can honour.

* **Duplicate object keys** — ``{"label": "comparable", "label": "incomparable"}`` is valid JSON
  to Python (the last value wins) but ambiguous; proxies and other parsers may keep the first.
* **Deep nesting** — Python's decoder recurses once per level and raises ``RecursionError``
  (a 500) near 1,000 levels; no body of ours is deeper than a few levels, so more than
  ``MAX_DEPTH`` is refused before decoding, by a scan of the brackets.
* **NUL and lone surrogates in strings** (keys included) — valid JSON escapes (``\\u0000``,
  ``\\ud800``) that PostgreSQL cannot store or compare (a 500 deep in a query otherwise).
* NaN and Infinity are refused already (DRF's STRICT_JSON).

Each gives 400 with a message.
"""

from __future__ import annotations

import codecs
import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json

from common.text import text_problem

MAX_DEPTH = 32


class DuplicateKey(ValueError):
    pass


class UnstorableText(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(f"duplicate key {key[:50]!r} in a JSON object")
        result[key] = value
    return result


def _depth_exceeds(text: str, limit: int) -> bool:
    """True when brackets outside strings nest deeper than ``limit`` (no recursion)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _check_strings(data: object) -> None:
    stack = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise UnstorableText(f"the string at {path or 'the top'} {problem}")
        elif isinstance(value, dict):
            for key, item in value.items():
                problem = text_problem(key)
                if problem:
                    raise UnstorableText(f"an object key {problem}")
                stack.append((f"{path}.{key[:50]}" if path else key[:50], item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = codecs.getreader(encoding)(stream).read()
            if _depth_exceeds(text, MAX_DEPTH):
                raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
            data = json.loads(
                text,
                object_pairs_hook=_unique_keys,
                parse_constant=drf_json.strict_constant if self.strict else None,
            )
            _check_strings(data)
            return data
        except (ValueError, RecursionError) as exc:  # DuplicateKey, UnstorableText included
            raise ParseError(f"JSON parse error - {exc}") from None
