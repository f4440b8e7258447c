"""Reads shared by annotation's pages, API and rooms: studies, progress, judgments newest first,
the study's item pool, visible groups, comments for reviewers. The rooms' own reads:
``annotation/{setup,labelling,groups}/selectors.py``."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Q, QuerySet, prefetch_related_objects

from accounts.tokens import token_scope
from spaces.models import Item

from .access import Action, Role, may
from .models import (
    ComparableGroup,
    Membership,
    PairComment,
    PairJudgment,
    Source,
    Study,
    pool_queryset,
)

POOL_CACHE_SECONDS = 300
_pool_cache: dict[int, tuple[tuple, float, StudyPool]] = {}
_pool_lock = threading.Lock()


# --- Studies ----------------------------------------------------------------------------------


def studies_for_user(*, user) -> list[tuple[Study, str]]:
    """Studies the user can open, with the user's role (staff: every study, as admin).

    Archived studies are left out; closed ones are listed for their admins (and staff) only.
    A request with a token limited to studies lists those only.
    """
    scope = token_scope(user)
    if user.is_staff or user.is_superuser:
        studies = Study.objects.filter(archived_at__isnull=True).select_related("space")
        if scope is not None:
            studies = studies.filter(pk__in=scope)
        return [(study, Role.ADMIN) for study in studies]
    memberships = (
        Membership.objects.filter(user=user, study__archived_at__isnull=True)
        .filter(Q(study__is_active=True) | Q(role=Role.ADMIN))
        .select_related("study", "study__space")
        .order_by("study__name")
    )
    if scope is not None:
        memberships = memberships.filter(study_id__in=scope)
    return [(m.study, m.role) for m in memberships]


def studies_archived(*, user) -> list[Study]:
    """Archived studies the user administers (staff: all)."""
    qs = Study.objects.filter(archived_at__isnull=False).select_related("space")
    if not (user.is_staff or user.is_superuser):
        qs = qs.filter(memberships__user=user, memberships__role=Role.ADMIN)
    return list(qs.order_by("name"))


def may_manage(*, user, study: Study) -> bool:
    return may(user, study, Action.MANAGE)


def study_get(*, study_id: int) -> Study | None:
    return Study.objects.select_related("space").filter(pk=study_id).first()


@dataclass(frozen=True)
class Progress:
    """An annotator's answers against the target. Shown as ``shown / target`` (never more
    than the target) plus ``extra`` answers beyond it."""

    answered: int
    target: int
    stops: bool = False  # the study stops the annotator at the target

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.answered / self.target)) if self.target else 100

    @property
    def shown(self) -> int:
        return min(self.answered, self.target)

    @property
    def extra(self) -> int:
        return max(0, self.answered - self.target)

    @property
    def reached(self) -> bool:
        return self.answered >= self.target

    @property
    def complete(self) -> bool:
        """Reached, and the study says that is the end."""
        return self.stops and self.reached


def target_for(*, study: Study, user) -> int:
    """The annotator's target: their membership's override, else the study's."""
    override = (
        Membership.objects.filter(study=study, user=user).values_list("target", flat=True).first()
    )
    return study.target_per_annotator if override is None else override


def progress_for(*, study: Study, user) -> Progress:
    answered = PairJudgment.objects.filter(study=study, annotator=user).count()
    return Progress(
        answered=answered, target=target_for(study=study, user=user), stops=study.stop_at_target
    )


COUNTS_CACHE_SECONDS = 60


def study_counts(*, study: Study) -> dict:
    """Totals for the review page, cached a minute (they read the whole study: ~0.2 s per 1M
    judgments on PostgreSQL): judgments by source, groups, and answers per annotator."""

    def compute() -> dict:
        by_source = dict(
            PairJudgment.objects.filter(study=study)
            .values_list("source")
            .annotate(n=Count("id"))
            .values_list("source", "n")
        )
        per_annotator = list(
            PairJudgment.objects.filter(study=study, annotator__isnull=False)
            .values("annotator__username")
            .annotate(n=Count("id"))
            .order_by("-n")[:100]
        )
        return {
            "annotated": by_source.get(Source.ANNOTATED, 0),
            "imported": by_source.get(Source.IMPORTED, 0),
            "groups": ComparableGroup.objects.filter(study=study).count(),
            "per_annotator": per_annotator,
        }

    return cache.get_or_set(f"annotation:study-counts:{study.pk}", compute, COUNTS_CACHE_SECONDS)


# --- Judgments --------------------------------------------------------------------------------


def newest_first(
    qs: QuerySet[PairJudgment],
    study: Study,
    *,
    before_id: int | None = None,
    annotator_id: int | None = None,
) -> QuerySet[PairJudgment]:
    """A study's judgments (by one annotator; older than ``before_id``), newest first, read
    backwards along the ``(study, id)`` or ``(study, annotator, id)`` index.

    ``qs`` must not be filtered by study or annotator already. SQLite seeks ``study_id = X
    [AND annotator_id = U] AND id < B ORDER BY id DESC`` on the index. With that form
    PostgreSQL may walk the primary key backwards and filter instead, reading every newer row
    of other studies or annotators (it did: 240 ms for someone's last 10 answers among 1M). It
    gets the last equality as a one-value range (``BETWEEN X AND X``), which the planner does
    not fold into a constant, ordered by that column and ``id``: an order only the composite
    index provides; the inclusive bound still lets ``id < B`` position the scan.
    """
    if before_id is not None:
        qs = qs.filter(id__lt=before_id)
    postgres = connection.vendor == "postgresql"
    if annotator_id is not None:
        qs = qs.filter(study_id=study.pk)
        if not postgres:
            return qs.filter(annotator_id=annotator_id).order_by("-id")
        return qs.filter(annotator_id__gte=annotator_id, annotator_id__lte=annotator_id).order_by(
            "-annotator_id", "-id"
        )
    if not postgres:
        return qs.filter(study_id=study.pk).order_by("-id")
    return qs.filter(study_id__gte=study.pk, study_id__lte=study.pk).order_by("-study_id", "-id")


def judgments_newest(
    *,
    study: Study,
    limit: int,
    before_id: int | None = None,
    annotator_id: int | None = None,
    filters: dict | None = None,
) -> list[PairJudgment]:
    """Newest judgments of a study with their items and annotator, in two simple queries.

    The ids come from the judgment table alone (index-only on PostgreSQL), then the rows with
    their joins by primary key: joined in one query, the planner re-ordered the work around the
    joins and read hundreds of thousands of rows.
    """
    base = PairJudgment.objects.filter(**(filters or {}))
    ids = list(
        newest_first(base, study, before_id=before_id, annotator_id=annotator_id).values_list(
            "id", flat=True
        )[:limit]
    )
    rows = PairJudgment.objects.select_related("item_a", "item_b", "annotator").in_bulk(ids)
    return [rows[i] for i in ids if i in rows]


def judgments_recent(
    *, study: Study, user, mine: bool = False, limit: int = 10, before_id: int | None = None
) -> list[PairJudgment]:
    """Newest judgments first. Annotators see only their own answers; reviewers and admins
    every answer of the study (``mine`` restricts them to their own)."""
    own = mine or not may(user, study, Action.REVIEW)
    return judgments_newest(
        study=study, limit=limit, before_id=before_id, annotator_id=user.pk if own else None
    )


# --- Items and the study's pool ---------------------------------------------------------------


@dataclass(frozen=True)
class StudyPool:
    """The ids and matrix rows of a study's items, aligned, as arrays (cached per process)."""

    ids: np.ndarray  # ascending
    rows: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.size)

    def contains(self, item_ids) -> np.ndarray:
        """Whether each id is in the pool (binary search on the sorted ids)."""
        item_ids = np.asarray(item_ids, dtype=np.int64)
        if self.ids.size == 0:
            return np.zeros(item_ids.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self.ids, item_ids), self.ids.size - 1)
        return self.ids[pos] == item_ids


def pool_tag_ids(*, study: Study) -> list[int]:
    """The study's pool tags, loaded once per study instance (a request answering and then
    choosing the next pair asks twice). Kept in Django's prefetch cache, which
    ``study.pool_tags.add/remove/set/clear`` and ``refresh_from_db`` empty."""
    if "pool_tags" not in getattr(study, "_prefetched_objects_cache", {}):
        prefetch_related_objects([study], "pool_tags")
    return sorted(tag.pk for tag in study.pool_tags.all())


def pool_items(*, study: Study) -> QuerySet[Item]:
    return pool_queryset(study, pool_tag_ids(study=study))


def study_pool(*, study: Study) -> StudyPool:
    """The pool as arrays, cached for a few minutes per process (400k items load once)."""
    tag_ids = tuple(pool_tag_ids(study=study))
    signature = (study.space_id, study.space.item_count, study.pool, study.pool_revision, tag_ids)
    now = time.monotonic()
    with _pool_lock:
        hit = _pool_cache.get(study.pk)
    if hit and hit[0] == signature and hit[1] > now:
        return hit[2]
    qs = pool_queryset(study, list(tag_ids))
    pairs = np.array(list(qs.order_by("id").values_list("id", "row")), dtype=np.int64)
    pairs = pairs.reshape(-1, 2)
    pool = StudyPool(ids=pairs[:, 0].copy(), rows=pairs[:, 1].copy())
    with _pool_lock:
        _pool_cache[study.pk] = (signature, now + POOL_CACHE_SECONDS, pool)
    return pool


def pool_cache_clear() -> None:
    with _pool_lock:
        _pool_cache.clear()


def items_in_pool(*, study: Study, item_ids) -> dict[int, Item]:
    """The given items that belong to the study's pool, by id (one query)."""
    ids = {int(i) for i in item_ids}
    return {item.pk: item for item in pool_items(study=study).filter(pk__in=ids)}


def not_in_pool(item_ids, found: dict[int, Item]) -> str | None:
    """The refusal naming the first of ``item_ids`` missing from ``found`` (what
    :func:`items_in_pool` gave); None when every one is in the pool."""
    missing = [i for i in item_ids if i not in found]
    if missing:
        return f"Item {missing[0]} does not exist or is not in this study's pool."
    return None


# --- Groups and comments (the review and completion pages, the groups API) --------------------


def groups_visible(*, study: Study, user) -> QuerySet[ComparableGroup]:
    """Annotators see their own groups; reviewers and admins every group of the study."""
    qs = (
        ComparableGroup.objects.filter(study=study)
        .select_related("created_by")
        .annotate(size=Count("members"))
        .order_by("-updated_at", "-id")
    )
    if not may(user, study, Action.REVIEW):
        qs = qs.filter(created_by=user)
    return qs


def pair_comments(*, study: Study, limit: int = 200) -> list[PairComment]:
    """The newest comments on pairs, for reviewers."""
    return list(
        PairComment.objects.filter(study=study)
        .select_related("author", "item_a", "item_b")
        .order_by("-id")[:limit]
    )
