"""Reads for the study dashboard: progress, label mix, groups and annotator quality.

Counts, medians and agreement come from the study's tallies (:mod:`learning.dashboards.tallies`:
counts per day, annotator, source and label, gold answers, sorted times, the agreement's pair
tallies), which the worker keeps up to a watermark and extends with the newer answers, so a
refresh after a burst of answers costs in proportion to the burst plus one checksum aggregate.
This module only computes; :mod:`learning.dashboards.refresh` stores the figures in the shared
cache under the study's :func:`data_watermark` and has the worker compute them, so a page never
waits for a big study.

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
from datetime import UTC, date, datetime

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, Max

from annotation.models import ComparableGroup, GoldPair, LabelCode, Source, Study
from annotation.review.selectors import adjudicated_labels, disagreement_tally
from learning.dashboards import agreement, tallies
from learning.dashboards.answer_rows import LABELS, SOURCES
from learning.evaluation.reasons import ReasonCounts, reason_counts
from learning.refits import snapshots

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
    reasons: ReasonCounts | None = None  # the fields annotators cite (record studies)
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
    * One snapshot (REPEATABLE READ) for every query, unless already inside a transaction: the
      tallies' count and checksum, the newer answers and the other counts see the same answers.
    """
    if connection.vendor != "postgresql":
        yield
        return
    outermost = not connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if outermost:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute(  # SET LOCAL for both, in one statement
            "SELECT set_config('work_mem', %s, true), set_config('enable_nestloop', 'off', true)",
            [WORK_MEM],
        )
        yield


def _compute(study: Study) -> StudyDashboard:
    found, _ = tallies.study_tallies(study)
    table = found.table  # (day, annotator, source, label, answers)
    label_mix = _sums(table[:, 3], table[:, 4])
    by_source = _sums(table[:, 2], table[:, 4])
    days, per_day = _per_day(table)
    annotators = _annotators(study, found)
    kappas, alpha, overlapping = _agreement(found.figures_agreement, annotators)
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
    answered = found.all_counts.sum(axis=1) >= 2
    keys = found.all_keys[answered]
    resolved, disagreements = disagreement_tally(
        np.stack([keys >> 32, keys & (2**32 - 1)], axis=1),
        found.all_counts[answered],
        adjudicated_labels(study=study),
    )
    return StudyDashboard(
        total=sum(by_source.values()),
        annotated=by_source.get(SOURCES.index(Source.ANNOTATED), 0),
        imported=by_source.get(SOURCES.index(Source.IMPORTED), 0),
        label_mix={label.value: label_mix.get(code, 0) for code, label in enumerate(LABELS)},
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
        reasons=reason_counts(study) if study.space.feature_map else None,
        thresholds={
            "too_fast_seconds": TOO_FAST_SECONDS,
            "low_majority_agreement": LOW_MAJORITY_AGREEMENT,
            "low_gold_accuracy": LOW_GOLD_ACCURACY,
            "min_compared": MIN_COMPARED,
            "min_kappa_overlap": MIN_KAPPA_OVERLAP,
        },
    )


def _sums(keys: np.ndarray, counts: np.ndarray) -> dict[int, int]:
    found: dict[int, int] = {}
    for key, n in zip(keys.tolist(), counts.tolist(), strict=True):
        found[key] = found.get(key, 0) + n
    return found


def _per_day(table: np.ndarray) -> tuple[list[str], dict]:
    """Days (UTC dates of the answers, ISO) and per annotator ("imported" for answers with
    none) the answers of each day."""
    epoch = date(1970, 1, 1).toordinal()
    day_numbers = sorted(set(table[:, 0].tolist()))
    days = [date.fromordinal(epoch + day).isoformat() for day in day_numbers]
    index = {day: i for i, day in enumerate(day_numbers)}
    series: dict = {}
    for day, annotator, n in table[:, [0, 1, 4]].tolist():
        name = annotator if annotator >= 0 else "imported"
        series.setdefault(name, [0] * len(days))[index[day]] += n
    return days, series


def _annotators(study: Study, found: tallies.FigureTallies) -> dict[int, AnnotatorQuality]:
    """Label counts, medians and gold accuracy per annotator: their answers by people, the
    gold answers matched against the study's gold pairs now."""
    table = found.table[found.table[:, 1] >= 0]  # imported answers named to a member count
    annotators: dict[int, AnnotatorQuality] = {}
    for user_id, label, n in table[:, [1, 3, 4]].tolist():
        quality = annotators.setdefault(user_id, AnnotatorQuality(user_id=user_id, username=""))
        quality.labels[LABELS[label].value] = quality.labels.get(LABELS[label].value, 0) + n
        quality.answers += n
    gold = {
        (a, b): int(LabelCode.of(label))
        for a, b, label in GoldPair.objects.filter(study=study).values_list(
            "item_a_id", "item_b_id", "label"
        )
    }
    for user_id, a, b, label in found.gold.tolist():
        expected = gold.get((a, b))
        quality = annotators.get(user_id)
        if expected is None or quality is None:  # not (or no longer) a gold pair
            continue
        quality.gold_answers += 1
        quality.gold_correct += int(label == expected)
    for quality in annotators.values():
        if quality.gold_answers:
            quality.gold_accuracy = quality.gold_correct / quality.gold_answers
    return annotators


def _agreement(
    found: agreement.Agreement, annotators: dict[int, AnnotatorQuality]
) -> tuple[list[KappaPair], float | None, int]:
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
