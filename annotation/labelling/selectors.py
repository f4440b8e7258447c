"""Reads of the answer path: who answered which pairs (one index probe per pair), gold pairs, and
an annotator's skipped pairs (cached)."""

from __future__ import annotations

import contextlib
import logging

from django.core.cache import cache
from django.db import connection

from annotation.models import GoldPair, PairJudgment, PairSkip, Source, Study

logger = logging.getLogger(__name__)

PAIR_CHUNK = 200


def judged_pairs(
    *, study: Study, pairs: list[tuple[int, int]], annotator_id: int | None = None
) -> list[tuple[int, int, int | None]]:
    """``(item_a, item_b, annotator)`` of people's judgments on the given canonical pairs.

    One index probe per pair, in raw SQL (the ORM's cost per OR term dominates with hundreds
    of candidate pairs): PostgreSQL joins ``unnest`` of two arrays (a nested loop over the
    pair index, constant planning time); SQLite gets one ``(item_a = ? AND item_b = ?)`` term
    per pair, which it answers as a multi-index OR.
    """
    if not pairs:
        return []
    table = PairJudgment._meta.db_table
    where = "j.study_id = %s AND j.source = %s"
    tail: list = [study.pk, Source.ANNOTATED]
    if annotator_id is not None:
        where += " AND j.annotator_id = %s"
        tail.append(annotator_id)
    found: list[tuple[int, int, int | None]] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT j.item_a_id, j.item_b_id, j.annotator_id FROM {table} j "
                "JOIN unnest(%s::bigint[], %s::bigint[]) AS p(a, b) "
                f"ON j.item_a_id = p.a AND j.item_b_id = p.b WHERE {where}",
                [[int(a) for a, _ in pairs], [int(b) for _, b in pairs], *tail],
            )
            return cursor.fetchall()
        for start in range(0, len(pairs), PAIR_CHUNK):
            chunk = pairs[start : start + PAIR_CHUNK]
            terms = " OR ".join(["(j.item_a_id = %s AND j.item_b_id = %s)"] * len(chunk))
            params = list(tail)
            for a, b in chunk:
                params += [int(a), int(b)]
            cursor.execute(
                f"SELECT j.item_a_id, j.item_b_id, j.annotator_id FROM {table} j "
                f"WHERE {where} AND ({terms})",
                params,
            )
            found.extend(cursor.fetchall())
    return found


def answered_pairs(*, study: Study, user, pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Which of the canonical ``pairs`` the user has answered in the study."""
    if not pairs:
        return set()
    return {(a, b) for a, b, _ in judged_pairs(study=study, pairs=pairs, annotator_id=user.pk)}


def gold_pair_exists(*, study: Study, item_a_id: int, item_b_id: int) -> bool:
    return GoldPair.objects.filter(study=study, item_a_id=item_a_id, item_b_id=item_b_id).exists()


# --- Skipped pairs ----------------------------------------------------------------------------

SKIPS_CACHED = 3600  # seconds; a new skip forgets the user's entry at once


def _skips_key(study_id: int, user_id: int) -> str:
    return f"annotation:skips:{study_id}:{user_id}"


def skipped_pairs(*, study: Study, user) -> set[tuple[int, int]]:
    """The canonical pairs ``user`` skipped in ``study`` (cached: the sampler asks per pair)."""
    key = _skips_key(study.pk, user.pk)
    try:
        found = cache.get(key)
    except Exception:  # noqa: BLE001 - a down cache costs a query, never an answer
        found = None
    if found is None:
        rows = PairSkip.objects.filter(study=study, annotator=user)
        found = set(rows.values_list("item_a_id", "item_b_id"))
        with contextlib.suppress(Exception):
            cache.set(key, found, SKIPS_CACHED)
    return found


def skipped_pairs_forget(*, study: Study, user) -> None:
    try:
        cache.delete(_skips_key(study.pk, user.pk))
    except Exception:  # noqa: BLE001 - the entry then expires after SKIPS_CACHED
        logger.warning("cache unreachable: skips of user %s may be offered again", user.pk)
