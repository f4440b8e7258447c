"""The API's JSON parser: DRF's, plus a refusal of duplicate object keys.

``{"label": "comparable", "label": "incomparable"}`` is valid JSON to Python (the last value
wins) but ambiguous; proxies and other parsers may keep the first. Such bodies are refused with
400 naming the key. NaN and Infinity are refused already (DRF's STRICT_JSON).
"""

from __future__ import annotations

import codecs
import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json


class DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(f"duplicate key {key[:50]!r} in a JSON object")
        result[key] = value
    return result


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            decoded = codecs.getreader(encoding)(stream)
            return json.load(
                decoded,
                object_pairs_hook=_unique_keys,
                parse_constant=drf_json.strict_constant if self.strict else None,
            )
        except ValueError as exc:  # DuplicateKey included
            raise ParseError(f"JSON parse error - {exc}") from None
