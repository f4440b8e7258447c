"""Reads for the study dashboard: progress, label mix, groups and annotator quality.

Counts come from database aggregates; agreement is computed with numpy on the *overlapping*
judgments only (pairs answered by two or more annotators, fetched in one query with a window
count), so the cost grows with the overlap, not with every answer. The whole dashboard is
cached per study with its data watermark (highest judgment id, judgment count, gold pairs,
group revision): a reload with unchanged data is free, and while answers keep arriving the
figures are recomputed at most once every ``STALE_SECONDS``.

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

import itertools
import time
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime

import krippendorff
import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.db.models import CharField, Count, F, Max, Window
from django.db.models.functions import Cast, Substr, TruncDate
from sklearn.metrics import cohen_kappa_score

from annotation.models import (
    ComparableGroup,
    GoldPair,
    Label,
    PairJudgment,
    Source,
    Study,
    StudyCounter,
)

LABELS = [Label.COMPARABLE, Label.INCOMPARABLE, Label.UNSURE]
CODE = {label.value: code for code, label in enumerate(LABELS)}

MIN_KAPPA_OVERLAP = 5  # shared pairs below which κ of two annotators is not reported
TOO_FAST_SECONDS = 1.0  # median seconds per answer below this: "too fast"
MIN_TIMED_ANSWERS = 10  # ... judged only with at least this many timed answers
LOW_MAJORITY_AGREEMENT = 0.5  # agreement with the majority below this: "low agreement"
MIN_COMPARED = 10  # ... judged only with at least this many answers compared
LOW_GOLD_ACCURACY = 0.7  # gold accuracy below this: "low gold accuracy"
MIN_GOLD_ANSWERS = 5
CACHE_SECONDS = 3600
STALE_SECONDS = 60  # a dashboard older than the data is served for at most this long


@dataclass
class AnnotatorQuality:
    user_id: int
    username: str
    answers: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    median_seconds: float | None = None
    timed: int = 0
    gold_answers: int = 0
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
    computed_at: float = field(default_factory=time.time)
    stale: bool = False  # newer answers exist; recomputed within STALE_SECONDS

    @property
    def computed_at_datetime(self) -> datetime:
        return datetime.fromtimestamp(self.computed_at, tz=UTC)


def _watermark(study: Study) -> tuple:
    marks = PairJudgment.objects.filter(study=study).aggregate(top=Max("id"), n=Count("id"))
    gold = GoldPair.objects.filter(study=study).aggregate(top=Max("id"), n=Count("id"))
    revision = StudyCounter.objects.filter(study=study).values_list("group_revision", flat=True)
    return (marks["top"], marks["n"], gold["top"], gold["n"], revision.first())


def study_dashboard(
    study: Study, *, use_cache: bool = True, max_age: float = STALE_SECONDS
) -> StudyDashboard:
    """The dashboard of a study.

    Cached with the data watermark it was computed at: served while the data is unchanged,
    and, while answers keep arriving, for at most ``max_age`` seconds (so a busy study with a
    million answers is recomputed at most once a minute, not on every page load).
    """
    marks = _watermark(study)
    key = f"learning:dashboard:{study.pk}"
    if use_cache:
        found = cache.get(key)
        if found is not None:
            cached_marks, dashboard = found
            if cached_marks == marks or time.time() - dashboard.computed_at < max_age:
                dashboard.stale = cached_marks != marks
                return dashboard
    dashboard = _compute(study)
    cache.set(key, (marks, dashboard), CACHE_SECONDS)
    return dashboard


def _compute(study: Study) -> StudyDashboard:
    judgments = PairJudgment.objects.filter(study=study)
    people = judgments.filter(source=Source.ANNOTATED, annotator__isnull=False)
    label_mix = dict(judgments.values_list("label").annotate(n=Count("id")).values_list("label", "n"))
    by_source = dict(
        judgments.values_list("source").annotate(n=Count("id")).values_list("source", "n")
    )
    days, per_day = _per_day(judgments)
    annotators = _annotators(people)
    for row in _gold(study, people):
        found = annotators.get(row[0])
        if found is not None:
            found.gold_answers, correct = row[1], row[2]
            found.gold_accuracy = correct / row[1] if row[1] else None
    kappas, alpha, overlapping = _agreement(people, annotators)
    users = dict(get_user_model().objects.filter(pk__in=list(annotators)).values_list("pk", "username"))
    for quality in annotators.values():
        quality.username = users.get(quality.user_id, str(quality.user_id))
        quality.flags = flags_for(quality)
    for pair in kappas:
        pair.a, pair.b = users.get(pair.a, str(pair.a)), users.get(pair.b, str(pair.b))
    per_day = {users.get(k, k) if isinstance(k, int) else k: v for k, v in per_day.items()}
    groups = ComparableGroup.objects.filter(study=study)
    members = ComparableGroup.members.through.objects.filter(comparablegroup__study=study)
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
        thresholds={
            "too_fast_seconds": TOO_FAST_SECONDS, "low_majority_agreement": LOW_MAJORITY_AGREEMENT,
            "low_gold_accuracy": LOW_GOLD_ACCURACY, "min_compared": MIN_COMPARED,
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


def _annotators(people) -> dict[int, AnnotatorQuality]:
    found: dict[int, AnnotatorQuality] = {}
    for user_id, label, n in people.values_list("annotator_id", "label").annotate(n=Count("id")):
        quality = found.setdefault(user_id, AnnotatorQuality(user_id=user_id, username=""))
        quality.labels[label] = n
        quality.answers += n
    pairs = people.filter(elapsed_ms__isnull=False).values_list("annotator_id", "elapsed_ms")
    timed = np.fromiter(itertools.chain.from_iterable(pairs), dtype=np.int64).reshape(-1, 2)
    if timed.size:
        order = np.lexsort((timed[:, 1], timed[:, 0]))
        timed = timed[order]
        users, starts, counts = np.unique(timed[:, 0], return_index=True, return_counts=True)
        for user_id, start, count in zip(users, starts, counts, strict=True):
            chunk = timed[start:start + count, 1]  # sorted: the median is the middle
            median = (chunk[(count - 1) // 2] + chunk[count // 2]) / 2
            found[int(user_id)].median_seconds = float(median) / 1000
            found[int(user_id)].timed = int(count)
    return found


def _gold(study: Study, people) -> list[tuple[int, int, int]]:
    """(annotator, gold answers, correct) from the gold pairs and grouped answers."""
    gold = {(a, b): label for a, b, label in
            GoldPair.objects.filter(study=study).values_list("item_a_id", "item_b_id", "label")}
    if not gold:
        return []
    totals: dict[int, list[int]] = {}
    grouped = (
        people.filter(is_gold=True)
        .values_list("annotator_id", "item_a_id", "item_b_id", "label")
        .annotate(n=Count("id"))
    )
    for user_id, a, b, label, n in grouped:
        if (a, b) not in gold:
            continue
        entry = totals.setdefault(user_id, [0, 0])
        entry[0] += n
        entry[1] += n if gold[(a, b)] == label else 0
    return [(user_id, n, correct) for user_id, (n, correct) in totals.items()]


def _agreement(people, annotators) -> tuple[list[KappaPair], float | None, int]:
    overlapping = (
        people.filter(is_gold=False)
        .annotate(n=Window(Count("id"), partition_by=[F("item_a_id"), F("item_b_id")]))
        .filter(n__gte=2)
        .values_list("annotator_id", "item_a_id", "item_b_id", "label")
    )
    rows = list(overlapping)
    if not rows:
        return [], None, 0
    user, a, b, names = (np.array(column) for column in zip(*rows, strict=True))
    user, a, b = user.astype(np.int64), a.astype(np.int64), b.astype(np.int64)
    label = np.full(names.size, -1, dtype=np.int8)
    for value, code in CODE.items():
        label[names == value] = code
    users, u = np.unique(user, return_inverse=True)
    _, t = np.unique(a * (int(b.max()) + 1) + b, return_inverse=True)
    n_units = int(t.max()) + 1
    counts = np.zeros((n_units, len(LABELS)), dtype=np.int64)
    np.add.at(counts, (t, label), 1)
    alpha = float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))
    alpha = None if np.isnan(alpha) else alpha

    _majority(u, t, label, counts, users, annotators)
    kappas = _kappas(u, t, label, users, n_units, annotators)
    return kappas, alpha, n_units


def _majority(u, t, label, counts, users, annotators) -> None:
    """Each answer against the majority of the other answers to its pair (leave one out)."""
    others = counts[t] - np.eye(len(LABELS), dtype=np.int64)[label]
    top = others.max(axis=1)
    decided = (others.sum(axis=1) > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agrees = decided & (others.argmax(axis=1) == label)
    compared = np.bincount(u[decided], minlength=users.size)
    agreed = np.bincount(u[agrees], minlength=users.size)
    for index, user_id in enumerate(users):
        quality = annotators[int(user_id)]
        quality.compared = int(compared[index])
        if compared[index]:
            quality.majority_agreement = float(agreed[index] / compared[index])


def _kappas(u, t, label, users, n_units, annotators) -> list[KappaPair]:
    """Cohen's κ per annotator pair on the pairs both answered (a units × annotators table)."""
    table = np.full((n_units, users.size), -1, dtype=np.int8)
    table[t, u] = label
    pairs: list[KappaPair] = []
    per_user: dict[int, list[float]] = {}
    for i in range(users.size):
        rows = table[table[:, i] >= 0]
        for j in range(i + 1, users.size):
            both = rows[:, j] >= 0
            overlap = int(both.sum())
            if overlap == 0:
                continue
            kappa = None
            if overlap >= MIN_KAPPA_OVERLAP:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    value = cohen_kappa_score(rows[both, i], rows[both, j], labels=[0, 1, 2])
                kappa = None if np.isnan(value) else float(value)
            pairs.append(KappaPair(int(users[i]), int(users[j]), overlap, kappa))
            if kappa is not None:
                per_user.setdefault(int(users[i]), []).append(kappa)
                per_user.setdefault(int(users[j]), []).append(kappa)
    for user_id, values in per_user.items():
        annotators[user_id].mean_kappa = float(np.mean(values))
    return pairs


def flags_for(quality: AnnotatorQuality) -> list[str]:
    flags = []
    if (quality.median_seconds is not None and quality.timed >= MIN_TIMED_ANSWERS
            and quality.median_seconds < TOO_FAST_SECONDS):
        flags.append("too fast")
    if (quality.majority_agreement is not None and quality.compared >= MIN_COMPARED
            and quality.majority_agreement < LOW_MAJORITY_AGREEMENT):
        flags.append("low agreement")
    if (quality.gold_accuracy is not None and quality.gold_answers >= MIN_GOLD_ANSWERS
            and quality.gold_accuracy < LOW_GOLD_ACCURACY):
        flags.append("low gold accuracy")
    return flags
