"""The data a refit fits: snapshots of a study's judgments and groups up to a watermark, how far
its data goes, and which studies have data newer than their versions.

Snapshots are a handful of queries returning numpy arrays (``values_list``), never a query per
judgment or group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Case, Count, Max, OuterRef, Subquery, When

from annotation.models import (
    ComparableGroup,
    GoldPair,
    Label,
    LabelCode,
    PairJudgment,
    StudyCounter,
)
from annotation.review.fit import adjudication_mark, fit_rows
from learning.models import MetricVersion, StudyLearningSettings

LABEL_CODES = {label.value: LabelCode.of(label) for label in Label}


@dataclass(frozen=True)
class DataMarks:
    """How far a study's data goes: highest judgment id, judgments up to it, group revision,
    and which adjudicated labels there are (``annotation/review/fit.py``; "" when none)."""

    judgment_watermark: int
    judgment_count: int
    group_watermark: int
    adjudications: str = ""


@dataclass(frozen=True)
class JudgmentSnapshot:
    """Judgments with id <= watermark, as parallel arrays (one row per answer)."""

    ids: np.ndarray  # int64
    item_a: np.ndarray  # item ids (canonical a < b)
    item_b: np.ndarray
    row_a: np.ndarray  # row indices into the study's embedding matrix
    row_b: np.ndarray
    label: np.ndarray  # annotation.models.LabelCode
    annotator: np.ndarray  # user id, -1 for imported answers
    gold: np.ndarray | None = None  # LabelCode of the gold pair's answer, -1 when not gold

    def __len__(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True)
class GroupSnapshot:
    """Comparable groups as a list of row-index arrays (each of size >= 2)."""

    rows: list[np.ndarray]
    creators: int  # distinct creators


def excluded_annotator_ids(*, learning_settings: StudyLearningSettings) -> list[int]:
    return sorted(learning_settings.excluded_annotators.values_list("id", flat=True))


def study_data_marks(*, study_id: int) -> DataMarks:
    """Three queries: the judgment id watermark with its count, the group revision, the
    adjudications' mark."""
    agg = PairJudgment.objects.filter(study_id=study_id).aggregate(top=Max("id"), n=Count("id"))
    revision = (
        StudyCounter.objects.filter(study_id=study_id).values_list("group_revision", flat=True)
    ).first()
    return DataMarks(
        judgment_watermark=int(agg["top"] or 0),
        judgment_count=int(agg["n"] or 0),
        group_watermark=int(revision or 0),
        adjudications=adjudication_mark(study_id=study_id),
    )


def judgment_snapshot(
    *, study_id: int, watermark: int, excluded_annotators: list[int]
) -> JudgmentSnapshot:
    """All judgments of the study with id <= watermark, with the gold label of answers to gold
    pairs that still exist; an adjudicated pair's answers replaced by its adjudicated label
    (``annotation/review/fit.py: fit_rows``, two queries)."""
    gold_label = GoldPair.objects.filter(
        study_id=study_id, item_a=OuterRef("item_a"), item_b=OuterRef("item_b")
    ).values("label")[:1]
    queryset = PairJudgment.objects.filter(study_id=study_id, id__lte=watermark)
    if excluded_annotators:
        queryset = queryset.exclude(annotator_id__in=excluded_annotators)
    gold = Case(When(is_gold=True, then=Subquery(gold_label)))
    rows = fit_rows(queryset, study_id=study_id, gold=gold)
    if not rows:
        empty = np.empty(0, dtype=np.int64)
        return JudgmentSnapshot(empty, empty, empty, empty, empty, empty, empty, empty)
    ids, item_a, item_b, row_a, row_b, labels, annotators, gold = zip(*rows, strict=True)
    codes = np.fromiter((LABEL_CODES[x] for x in labels), dtype=np.int8, count=len(labels))
    return JudgmentSnapshot(
        ids=np.asarray(ids, dtype=np.int64),
        item_a=np.asarray(item_a, dtype=np.int64),
        item_b=np.asarray(item_b, dtype=np.int64),
        row_a=np.asarray(row_a, dtype=np.int64),
        row_b=np.asarray(row_b, dtype=np.int64),
        label=codes,
        annotator=np.asarray([-1 if a is None else a for a in annotators], dtype=np.int64),
        gold=np.fromiter((LABEL_CODES.get(g, -1) for g in gold), dtype=np.int8, count=len(gold)),
    )


def group_snapshot(*, study_id: int, excluded_annotators: list[int]) -> GroupSnapshot:
    """The study's comparable groups as row arrays (one query over the membership table)."""
    through = ComparableGroup.members.through
    queryset = through.objects.filter(comparablegroup__study_id=study_id)
    if excluded_annotators:
        queryset = queryset.exclude(comparablegroup__created_by_id__in=excluded_annotators)
    pairs = np.asarray(
        list(
            queryset.values_list(
                "comparablegroup_id", "item__row", "comparablegroup__created_by_id"
            )
        ),
        dtype=object,
    )
    if pairs.size == 0:
        return GroupSnapshot(rows=[], creators=0)
    group_ids = pairs[:, 0].astype(np.int64)
    item_rows = pairs[:, 1].astype(np.int64)
    creators = {c for c in pairs[:, 2] if c is not None}
    order = np.argsort(group_ids, kind="stable")
    group_ids, item_rows = group_ids[order], item_rows[order]
    starts = np.flatnonzero(np.r_[True, group_ids[1:] != group_ids[:-1]])
    groups = [g for g in np.split(item_rows, starts[1:]) if g.size >= 2]
    return GroupSnapshot(rows=groups, creators=len(creators))


def study_ids_with_newer_data() -> list[int]:
    """Studies whose judgments or groups go past every live version (four queries).

    Compared per study against the highest watermarks of its live versions; a study with data
    and no version at all is included. Judgment counts catch answers that committed out of id
    order or were deleted.
    """
    judgments = {
        row["study_id"]: (row["top"], row["n"])
        for row in PairJudgment.objects.values("study_id").annotate(top=Max("id"), n=Count("id"))
    }
    revisions = dict(
        StudyCounter.objects.filter(group_revision__gt=0).values_list("study_id", "group_revision")
    )
    versions = (
        # A "fitting" row may be an orphan of a killed worker: it does not count as done.
        MetricVersion.objects.filter(transient=False)
        .exclude(status=MetricVersion.Status.FITTING)
        .values("study_id")
        .annotate(jw=Max("judgment_watermark"), gw=Max("group_watermark"))
    )
    marks = {row["study_id"]: (row["jw"], row["gw"]) for row in versions}
    counts = {
        (study, jw): n
        for study, jw, n in MetricVersion.objects.filter(status=MetricVersion.Status.READY)
        .order_by("id")  # the latest version at a watermark wins
        .values_list("study_id", "judgment_watermark", "counts__judgments_total")
    }
    stale = []
    for study_id in set(judgments) | set(revisions):
        top, n = judgments.get(study_id, (0, 0))
        jw, gw = marks.get(study_id, (0, 0))
        counted = counts.get((study_id, top))
        if top > jw or revisions.get(study_id, 0) > gw or counted is not None and int(counted) != n:
            stale.append(study_id)
    return sorted(stale)
