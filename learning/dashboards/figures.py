"""Reads for the study dashboard: progress, label mix, groups and annotator quality.

Counts, medians (PostgreSQL) and agreement come from database aggregates that return small
tables (see :mod:`learning.dashboards.agreement`), so the cost grows with the database's scan, not with
Python work per answer. This module only computes; :mod:`learning.dashboard_refresh` stores
the figures in the shared cache under the study's :func:`data_watermark` and has the worker
compute them, so a page never waits for a big study.

Definitions (shown on the page):

* Answers by people only (``source=annotated``); imported judgments are counted in progress.
  Gold answers are measured by gold accuracy and kept out of κ, α and the majority.
* Labels are nominal with three values (comparable, incomparable, unsure).
* Cohen's κ (scikit-learn) for each pair of annotators on the pairs both answered, when they
  share at least ``MIN_KAPPA_OVERLAP`` pairs; undefined (shown as —) when both always chose the
  same single label.
* Krippendorff's α (``krippendorff`` package, nominal) over all overlapping pairs.
* Agreement with the majority: for each answer, the most frequent label among the *other*
  answers to the same pair (no majority on a tie); the share of answers that match it.
* Gold accuracy: answers to gold pairs that equal the gold label (unsure counts as wrong).
* Flags, with thresholds below: too fast (median seconds per answer), low agreement (with the
  majority; a mean κ is shown but not flagged, since one bad annotator drags down the κ of
  everybody paired with them), low gold accuracy.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import (
    Case,
    CharField,
    Count,
    Max,
    OuterRef,
    Subquery,
    When,
)
from django.db.models.functions import Cast, Substr, TruncDate

from annotation.models import (
    ComparableGroup,
    GoldPair,
    PairJudgment,
    Source,
    Study,
)
from annotation.review.selectors import disagreement_progress
from learning.dashboards import agreement
from learning.refits import snapshots

LABELS = agreement.LABELS
MIN_KAPPA_OVERLAP = agreement.MIN_KAPPA_OVERLAP
TOO_FAST_SECONDS = 1.0  # median seconds per answer below this: "too fast"
MIN_TIMED_ANSWERS = 10  # ... judged only with at least this many timed answers
LOW_MAJORITY_AGREEMENT = 0.5  # agreement with the majority below this: "low agreement"
MIN_COMPARED = 10  # ... judged only with at least this many answers compared
LOW_GOLD_ACCURACY = 0.7  # gold accuracy below this: "low gold accuracy"
MIN_GOLD_ANSWERS = 5
WORK_MEM = "64MB"  # PostgreSQL work_mem while computing a dashboard


@dataclass
class AnnotatorQuality:
    user_id: int
    username: str
    answers: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    median_seconds: float | None = None
    timed: int = 0
    gold_answers: int = 0
    gold_correct: int = 0
    gold_accuracy: float | None = None
    compared: int = 0
    majority_agreement: float | None = None
    mean_kappa: float | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class KappaPair:
    a: str
    b: str
    overlap: int
    kappa: float | None


@dataclass
class StudyDashboard:
    total: int
    annotated: int
    imported: int
    label_mix: dict[str, int]
    days: list[str]
    per_day: dict[str, list[int]]  # series name (annotator or "imported") -> counts per day
    groups: int
    group_members: int
    annotators: list[AnnotatorQuality]
    kappas: list[KappaPair]
    alpha: float | None
    overlapping_pairs: int
    thresholds: dict[str, float] = field(default_factory=dict)
    disagreements: int = 0  # pairs answered twice or more with two labels
    disagreements_resolved: int = 0  # of them, adjudicated (annotation/review/)
    computed_at: float = field(default_factory=time.time)
    stale: bool = False  # newer answers exist; a refresh is on its way

    @property
    def computed_at_datetime(self) -> datetime:
        return datetime.fromtimestamp(self.computed_at, tz=UTC)


def data_watermark(study: Study) -> tuple:
    """What the figures depend on: (top judgment id, judgments, top gold id, gold pairs,
    group revision, adjudications); figures computed at one watermark are current while it
    holds."""
    marks = snapshots.study_data_marks(study_id=study.pk)
    gold = GoldPair.objects.filter(study=study).aggregate(top=Max("id"), n=Count("id"))
    return (
        marks.judgment_watermark,
        marks.judgment_count,
        gold["top"] or 0,
        gold["n"],
        marks.group_watermark,
        marks.adjudications,
    )


def study_dashboard(study: Study) -> StudyDashboard:
    """Compute the dashboard of a study (uncached: see :mod:`learning.dashboard_refresh`)."""
    with whole_study_plans():
        return _compute(study)


@contextmanager
def whole_study_plans():
    """On PostgreSQL, plan this transaction's queries for whole-study aggregates.

    * Sorts and hashes may use more memory than the default 4 MB. The agreement aggregates
      over a million answers otherwise spill to disk.
    * No nested-loop joins where a hash or merge join exists. The agreement queries join a
      study's answers with themselves on the pair. Right after a bulk import the table has no
      statistics yet (autovacuum analyses it later), so the planner expects one row and picks a
      nested loop. At 100,000 answers that took over 5 minutes, against 0.15 s hashed, and the
      worker's refits waited behind it (``benchmarks/refit.py``).
    """
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(  # SET LOCAL for both, in one statement
            "SELECT set_config('work_mem', %s, true), set_config('enable_nestloop', 'off', true)",
            [WORK_MEM],
        )
        yield


def _compute(study: Study) -> StudyDashboard:
    judgments = PairJudgment.objects.filter(study=study)
    people = judgments.filter(source=Source.ANNOTATED, annotator__isnull=False)
    label_mix = dict(
        judgments.values_list("label").annotate(n=Count("id")).values_list("label", "n")
    )
    by_source = dict(
        judgments.values_list("source").annotate(n=Count("id")).values_list("source", "n")
    )
    days, per_day = _per_day(judgments)
    annotators = _annotators(study, people)
    kappas, alpha, overlapping = _agreement(study, annotators)
    users = dict(
        get_user_model().objects.filter(pk__in=list(annotators)).values_list("pk", "username")
    )
    for quality in annotators.values():
        quality.username = users.get(quality.user_id, str(quality.user_id))
        quality.flags = flags_for(quality)
    for pair in kappas:
        pair.a, pair.b = users.get(pair.a, str(pair.a)), users.get(pair.b, str(pair.b))
    per_day = {users.get(k, k) if isinstance(k, int) else k: v for k, v in per_day.items()}
    groups = ComparableGroup.objects.filter(study=study)
    members = ComparableGroup.members.through.objects.filter(comparablegroup__study=study)
    resolved, disagreements = disagreement_progress(study=study)
    return StudyDashboard(
        total=sum(by_source.values()),
        annotated=by_source.get(Source.ANNOTATED, 0),
        imported=by_source.get(Source.IMPORTED, 0),
        label_mix={label.value: label_mix.get(label.value, 0) for label in LABELS},
        days=days,
        per_day=per_day,
        groups=groups.count(),
        group_members=members.count(),
        annotators=sorted(annotators.values(), key=lambda q: q.username),
        kappas=kappas,
        alpha=alpha,
        overlapping_pairs=overlapping,
        disagreements=disagreements,
        disagreements_resolved=resolved,
        thresholds={
            "too_fast_seconds": TOO_FAST_SECONDS,
            "low_majority_agreement": LOW_MAJORITY_AGREEMENT,
            "low_gold_accuracy": LOW_GOLD_ACCURACY,
            "min_compared": MIN_COMPARED,
            "min_kappa_overlap": MIN_KAPPA_OVERLAP,
        },
    )


def _day_expression():
    """The UTC date of ``created_at``, computed inside the database.

    SQLite stores timestamps as ISO text in UTC, and Django's ``TruncDate`` there calls back
    into Python for every row (seconds at a million rows); the first ten characters are the
    same date, computed natively.
    """
    if connection.vendor == "sqlite":
        return Substr(Cast("created_at", output_field=CharField()), 1, 10)
    return TruncDate("created_at", tzinfo=UTC)


def _per_day(judgments) -> tuple[list[str], dict]:
    rows = [
        (str(day), annotator, n)
        for day, annotator, n in judgments.annotate(day=_day_expression())
        .values_list("day", "annotator_id")
        .annotate(n=Count("id"))
        .order_by("day")
    ]
    days = sorted({day for day, _, _ in rows})
    index = {day: i for i, day in enumerate(days)}
    series: dict = {}
    for day, annotator, n in rows:
        name = annotator if annotator is not None else "imported"
        series.setdefault(name, [0] * len(days))[index[day]] += n
    return days, series


def _annotators(study: Study, people) -> dict[int, AnnotatorQuality]:
    """Label counts and gold accuracy per annotator (one grouped scan); the medians come with
    the agreement's read of the answers (:func:`_agreement`)."""
    gold_label = GoldPair.objects.filter(
        study=study, item_a=OuterRef("item_a"), item_b=OuterRef("item_b")
    ).values("label")[:1]
    grouped = (
        people.annotate(gold=Case(When(is_gold=True, then=Subquery(gold_label))))
        .values_list("annotator_id", "label", "gold")
        .annotate(n=Count("id"))
    )
    found: dict[int, AnnotatorQuality] = {}
    for user_id, label, gold, n in grouped:
        quality = found.setdefault(user_id, AnnotatorQuality(user_id=user_id, username=""))
        quality.labels[label] = quality.labels.get(label, 0) + n
        quality.answers += n
        if gold is not None:  # an answer to a gold pair that still exists
            quality.gold_answers += n
            quality.gold_correct += n if label == gold else 0
    for quality in found.values():
        if quality.gold_answers:
            quality.gold_accuracy = quality.gold_correct / quality.gold_answers
    return found


def _agreement(study: Study, annotators) -> tuple[list[KappaPair], float | None, int]:
    found = agreement.study_agreement(study.pk)
    for user_id, (median_ms, timed) in found.medians.items():
        if user_id in annotators:
            annotators[user_id].median_seconds = median_ms / 1000
            annotators[user_id].timed = timed
    for user_id, compared in found.compared.items():
        quality = annotators.get(user_id)
        if quality is None:
            continue
        quality.compared = compared
        if compared:
            quality.majority_agreement = found.agreed[user_id] / compared
        quality.mean_kappa = found.mean_kappa.get(user_id)
    kappas = [KappaPair(u, v, overlap, kappa) for u, v, overlap, kappa in found.kappas]
    return kappas, found.alpha, found.units


def flags_for(quality: AnnotatorQuality) -> list[str]:
    flags = []
    if (
        quality.median_seconds is not None
        and quality.timed >= MIN_TIMED_ANSWERS
        and quality.median_seconds < TOO_FAST_SECONDS
    ):
        flags.append("too fast")
    if (
        quality.majority_agreement is not None
        and quality.compared >= MIN_COMPARED
        and quality.majority_agreement < LOW_MAJORITY_AGREEMENT
    ):
        flags.append("low agreement")
    if (
        quality.gold_accuracy is not None
        and quality.gold_answers >= MIN_GOLD_ANSWERS
        and quality.gold_accuracy < LOW_GOLD_ACCURACY
    ):
        flags.append("low gold accuracy")
    return flags
