"""Reads of group curation: a group's members and history, and the item search (key prefixes in
word spaces; any shown field in record and text spaces)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import QuerySet
from django.db.models.functions import Lower

from annotation.models import ComparableGroup, GroupEdit, Study
from annotation.selectors import pool_items, pool_tag_ids
from spaces.models import EmbeddingSpace, Item
from spaces.search import items_matching


def group_members(*, group: ComparableGroup) -> list[Item]:
    return list(group.members.order_by("key"))


def group_history(*, group: ComparableGroup, limit: int = 50) -> list[GroupEdit]:
    return list(group.edits.select_related("user", "item").order_by("-id")[:limit])


def item_prefix_queryset(*, space_id: int, prefix: str) -> QuerySet[Item]:
    """Items of a space whose lower-cased key starts with ``prefix`` (already lower-cased)."""
    qs = Item.objects.filter(space_id=space_id).annotate(key_lower=Lower("key"))
    if connection.vendor == "sqlite":
        qs = qs.filter(key_lower__gte=prefix, key_lower__lt=prefix + "\U0010ffff")
    return qs.filter(key_lower__startswith=prefix)


def item_field_queryset(*, space_id: int, query: str, hidden: Sequence[str] = ()) -> QuerySet[Item]:
    """Records and texts: items matching every term of ``query`` in the key, the text or a
    shown record field (``sex:female``, ``age:>40``: the rule of ``spaces.search``). ``hidden``:
    the space's columns annotators do not see (``EmbeddingSpace.hidden_columns``) are never
    searched. A term the rule cannot read matches nothing (the group search is typed as you go).
    """
    return items_matching(space_id=space_id, query=query, hidden=hidden, strict=False)


def item_search(*, space_id: int, query: str, study: Study | None = None, limit: int = 20):
    """Items of a space matching ``query``, at most ``limit``.

    Word spaces: keys that start with ``query``, ignoring case, shortest keys first. Indexed on
    both databases (migration 0002): PostgreSQL matches ``lower(key) LIKE 'q%'`` with a
    text_pattern_ops index; SQLite gets the equivalent range on ``lower(key)``, which its plain
    expression index answers (SQLite's LIKE cannot use it). Record and text spaces: any
    field annotators see (:func:`item_field_queryset`), in row order.
    """
    prefix = query.strip().lower()
    if not prefix:
        return []
    kind, hidden = EmbeddingSpace.objects.filter(pk=space_id).values_list(
        "kind", "hidden_columns"
    ).first() or (None, [])
    by_field = kind in (EmbeddingSpace.Kind.RECORDS, EmbeddingSpace.Kind.TEXTS)
    if by_field:
        qs = item_field_queryset(space_id=space_id, query=query.strip(), hidden=hidden or ())
    else:
        qs = item_prefix_queryset(space_id=space_id, prefix=prefix)
    if study is not None and study.pool == Study.Pool.KEYS:
        qs = qs.filter(pk__in=pool_items(study=study).values("pk"))
    elif study is not None and study.pool == Study.Pool.TAGS and pool_tag_ids(study=study):
        qs = qs.filter(tags__in=pool_tag_ids(study=study)).distinct()
    if by_field:
        return list(qs.order_by("row")[:limit])
    # Fetch a bounded window in index order, then rank short (exact) matches first.
    window = list(qs.order_by("key_lower")[: max(limit * 5, 100)])
    window.sort(key=lambda item: (len(item.key), item.key.lower()))
    return window[:limit]
