"""Reasons with answers: the fields of a record pair that decided a comparable or incomparable
answer ("incomparable because of age", "comparable despite race").

One rule for "the fields a pair differs in" (:func:`differing_fields`), the same the labelling
page marks ≠ (``static/js/label.js: renderCompare``): the fields annotators are shown (the
space's hidden columns left out), compared as text, the key column (the field that names each
record) never counted. An answer's reasons are optional: a list of at most ``MAX_REASONS``
distinct such fields, only with ``comparable`` or ``incomparable`` and only in record studies.
"""

from __future__ import annotations

from annotation.models import Label
from common.errors import InvalidInput

MAX_REASONS = 5
MAX_FIELD_CHARS = 200
REASON_LABELS = (Label.COMPARABLE, Label.INCOMPARABLE)


def value_text(value) -> str:
    """A field's value as the labelling page shows it (missing → "", 3.0 → "3", true)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def differing_fields(left: dict, right: dict) -> list[str]:
    """The fields of two items (as the API shows them: ``key`` and the shown ``payload``) whose
    values differ, in the order of the left record's fields then the right's; the key column
    (its value is each item's key) left out. Empty for items that are not records."""
    a, b = left.get("payload"), right.get("payload")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return []
    fields = list(dict.fromkeys([*a, *b]))

    def is_key(f: str) -> bool:
        return value_text(a.get(f)) == str(left.get("key")) and value_text(b.get(f)) == str(
            right.get("key")
        )

    return [f for f in fields if not is_key(f) and value_text(a.get(f)) != value_text(b.get(f))]


def reasons_parse(value) -> list[str]:
    """The shape of ``reasons`` in a request (no query): a list of distinct field names."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput("reasons must be a list of field names.")
    if len(value) > MAX_REASONS:
        raise InvalidInput(f"reasons: at most {MAX_REASONS} fields.")
    if not all(isinstance(f, str) and 0 < len(f) <= MAX_FIELD_CHARS for f in value):
        raise InvalidInput(f"reasons must be field names (1 to {MAX_FIELD_CHARS} characters).")
    if len(set(value)) != len(value):
        raise InvalidInput("reasons: each field once.")
    return list(value)


def reasons_check(reasons: list[str], *, label: str, left: dict, right: dict) -> None:
    """InvalidInput unless every reason is a field the pair differs in, given with a comparable
    or incomparable answer (``left``/``right``: the items as the API shows them)."""
    if not reasons:
        return
    if label not in REASON_LABELS:
        raise InvalidInput("reasons go with comparable or incomparable answers only.")
    if not isinstance(left.get("payload"), dict) or not isinstance(right.get("payload"), dict):
        raise InvalidInput("reasons name fields of records; this study's items have none.")
    differing = set(differing_fields(left, right))
    unknown = [f for f in reasons if f not in differing]
    if unknown:
        raise InvalidInput(
            f"reasons must be fields the two records differ in; {unknown[0]!r} is not one."
        )
