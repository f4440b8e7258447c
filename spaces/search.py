"""Searching a space's items: the one rule for what a query matches, used by the data browser
(a study's items page) and the group search (``annotation.groups.selectors``).

A query is terms separated by spaces, all of which must match (quotes keep spaces in a value:
``purpose:"radio/tv"``):

* ``word`` — the key, the text or any searchable record field contains it, ignoring case;
* ``field:value`` — the record field contains the value, ignoring case (``sex:female``);
* ``field:=value`` — equals it, ignoring case; ``field:>40``, ``>=``, ``<``, ``<=`` — compares
  finite numbers (``age:>=40``) in a field that holds numbers (in a text field such as Adult's
  income, ``income:>50`` is looked for as text: ``>50K``); ``field:30..50`` — a range, both ends
  included (``age:30..``, ``age:..50``: one end);
* ``tag:name`` — the item has that tag (unless the records have a field named ``tag``).

``hidden``: fields never searched (the space's hidden columns when annotators' eyes are the
measure) — a term on one matches nothing, and words are then looked for field by field instead
of in the whole record. ``strict`` refuses unknown fields, bad numbers and unbalanced quotes
with a message; otherwise such terms match nothing. Not indexed: a scan of one space's rows,
bounded by the caller.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Sequence

from django.db.models import Q, QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.db.models.lookups import IContains

from common.errors import InvalidInput
from spaces.models import EmbeddingSpace, Item, first_record
from spaces.records.columns import record_columns

MAX_TERMS = 10
COMPARISONS = {">=": "gte", "<=": "lte", ">": "gt", "<": "lt"}
TERM = re.compile(r"^(?P<field>[^:\s]+):(?P<op>>=|<=|>|<|=)?(?P<value>.*)$", re.S)
RANGE = re.compile(r"^(?P<low>[^.]*(?:\.[0-9]+)?)\.\.(?P<high>.*)$")


def query_terms(query: str, *, strict: bool = True) -> list[str]:
    """The query's terms (shlex: quotes keep spaces); at most ``MAX_TERMS``."""
    try:
        terms = shlex.split(query)
    except ValueError:
        if strict:
            raise InvalidInput("A quote in the search is not closed.") from None
        terms = query.split()
    if strict and len(terms) > MAX_TERMS:
        raise InvalidInput(f"At most {MAX_TERMS} search terms.")
    return terms[:MAX_TERMS]


def items_matching(
    *, space_id: int, query: str, hidden: Sequence[str] = (), strict: bool = True
) -> QuerySet[Item]:
    """The items of the space matching every term of ``query`` (all items for an empty one)."""
    first = first_record(space_id)
    space = EmbeddingSpace.objects.filter(pk=space_id).first() if first else None
    fields = record_columns(space, first) if space is not None else []
    numeric = numeric_fields(space, first)
    hidden = set(hidden)
    terms = [
        _term(term, fields=fields, numeric=numeric, hidden=hidden, strict=strict)
        for term in query_terms(query, strict=strict)
    ]
    qs = Item.objects.filter(space_id=space_id)
    if any(needs_text for _, needs_text in terms):
        qs = qs.annotate(payload_text=Cast("payload", TextField()))
    for condition, _ in terms:
        qs = qs.filter(condition)
    return qs


def numeric_fields(space: EmbeddingSpace | None, first: dict) -> set[str]:
    """The record fields that hold numbers: a number in the first record, or a numeric
    feature of φ (a first record may leave a cell empty)."""
    found = {n for n, v in first.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    spec = (space.feature_map or {}) if space is not None else {}
    return found | {
        f["column"] for f in spec.get("features", []) if f.get("kind") == "numeric"
    } & set(first)


def _term(
    term: str, *, fields: list[str], numeric: set[str], hidden: set[str], strict: bool
) -> tuple[Q, bool]:
    """One term's condition, and whether it reads the record as text (``payload_text``)."""
    parsed = TERM.match(term)
    if parsed:
        field, op, value = parsed["field"], parsed["op"] or "", parsed["value"].strip()
        if field == "tag" and "tag" not in fields:
            return Q(tags__name__iexact=value), False
        if (field in fields and field not in hidden) or not strict:
            if field in hidden or not value or field not in fields:
                return Q(pk__in=[]), False
            if op in COMPARISONS and field not in numeric:
                op, value = "", op + value  # a text field: the operator is part of the text
            span = RANGE.match(value) if not op and field in numeric else None
            if span and (span["low"] or span["high"]):
                return _range_condition(field, span["low"], span["high"], strict=strict), False
            return _field_condition(field, op, value, strict=strict), False
        known = ", ".join(f for f in fields if f not in hidden) or "none: not a record space"
        raise InvalidInput(f"No field named {field!r} (fields: {known}; tags: tag:name).")
    return _word(term, fields=fields, hidden=hidden)


def _field_condition(field: str, op: str, value: str, *, strict: bool) -> Q:
    if op in COMPARISONS:
        try:
            number = float(value)
        except ValueError:
            if strict:
                raise InvalidInput(f"{field}:{op} needs a number, not {value!r}.") from None
            return Q(pk__in=[])
        if not math.isfinite(number):  # inf, nan, 1e309: no JSON number compares with them
            if strict:
                raise InvalidInput(f"{field}:{op} needs a finite number, not {value!r}.")
            return Q(pk__in=[])
        # A missing value (JSON null) is no number: PostgreSQL orders null below every number.
        return Q(**{f"payload__{field}__{COMPARISONS[op]}": number}) & ~Q(
            **{f"payload__{field}": None}
        )
    if op == "=":
        return Q(**{f"payload__{field}__iexact": value})
    return Q(**{f"payload__{field}__icontains": value})


def _range_condition(field: str, low: str, high: str, *, strict: bool) -> Q:
    """``field:low..high``: both ends included, either may be left out."""
    condition = Q()
    for end, op in ((low, ">="), (high, "<=")):
        if end.strip():
            condition &= _field_condition(field, op, end.strip(), strict=strict)
    return condition


def _word(word: str, *, fields: list[str], hidden: set[str]) -> tuple[Q, bool]:
    match = Q(key__icontains=word) | Q(text__icontains=word)
    if hidden:
        for name in fields:
            if name not in hidden:
                match |= Q(IContains(KeyTextTransform(name, "payload"), word))
        return match, False
    if not fields:
        return match, False
    escaped = json.dumps(word)[1:-1]  # SQLite stores non-ASCII characters escaped
    match |= Q(payload_text__icontains=word)
    if escaped != word:
        match |= Q(payload_text__icontains=escaped)
    return match, True
