"""Reads of the adjudication page and API: every pair answered two or more times with its label
counts (one aggregate query), filtered, and ordered by how much it matters to the fit.

The order: under the study's current metric (``annotation.hooks.current_metric``, learning's
published version, else its latest), pairs whose P(comparable) is nearest 0.5 first — the
pairs the metric is least sure of; without a metric, the most evenly split pairs first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Max, Q

from annotation.hooks import current_metric
from annotation.models import Adjudication, GoldPair, Label, PairComment, PairJudgment, Study
from annotation.reasons import differing_fields, value_text
from spaces.models import Item, attach_spaces

MAX_PAIRS = 50_000  # shared pairs read per study (the order needs them all)
CACHE_SECONDS = 600
A, B, ROW_A, ROW_B, NC, NI, NU = range(7)  # the columns of the counts array


class Agreement:
    """The agreement filter's values."""

    OPEN = "open"  # disagreements nobody resolved yet
    RESOLVED = "resolved"  # adjudicated pairs
    DISAGREED = "disagreed"  # every disagreement, resolved or not
    AGREED = "agreed"  # pairs everyone answered alike

    CHOICES = [
        (OPEN, "disagreements to resolve"),
        (RESOLVED, "resolved"),
        (DISAGREED, "all disagreements"),
        (AGREED, "agreed pairs"),
    ]


@dataclass
class SharedPair:
    """A pair answered two or more times: its label counts, and what the review knows of it."""

    item_a: int
    item_b: int
    comparable: int
    incomparable: int
    unsure: int
    adjudicated: str | None = None  # the adjudicated label
    p_comparable: float | None = None  # under the current metric
    key_a: str = ""  # the items' keys (``keys_attach``)
    key_b: str = ""
    gold: str | None = None  # the gold label when it is a gold pair (``review_pairs``)

    @property
    def ref(self) -> str:
        return f"{self.item_a}-{self.item_b}"


@dataclass
class Review:
    pairs: list[SharedPair]  # the first ``limit`` the filters keep, most important first
    count: int  # how many the filters keep
    shared: int  # pairs answered two or more times
    disagreements: int
    resolved: int  # disagreements with an adjudicated label
    metric: str = ""  # the metric that ordered them ("" when none)
    truncated: bool = False


def answer_counts(*, study: Study) -> tuple[np.ndarray, bool]:
    """Every pair of the study answered two or more times (people and imports) as rows of
        (item a, item b, row a, row b, comparable, incomparable, unsure) — one grouped query, kept
        in the cache while the study's judgments stay the same (their highest id and count: ids are
    never reused, and an undo lowers the count)."""
    marks = PairJudgment.objects.filter(study=study).aggregate(top=Max("id"), n=Count("id"))
    made = study.created_at.timestamp() if study.created_at else 0  # ids alone may recur
    key = f"annotation:review:counts:{study.pk}:{made}:{marks['top']}:{marks['n']}"
    found = cache.get(key)
    if found is None:
        rows = list(
            PairJudgment.objects.filter(study=study)
            .values("item_a_id", "item_b_id")
            .annotate(
                n=Count("id"),
                nc=Count("id", filter=Q(label=Label.COMPARABLE)),
                ni=Count("id", filter=Q(label=Label.INCOMPARABLE)),
                nu=Count("id", filter=Q(label=Label.UNSURE)),
                ra=Max("item_a__row"),
                rb=Max("item_b__row"),
            )
            .filter(n__gte=2)
            .order_by("item_a_id", "item_b_id")
            .values_list("item_a_id", "item_b_id", "ra", "rb", "nc", "ni", "nu")[: MAX_PAIRS + 1]
        )
        counts = np.asarray(rows[:MAX_PAIRS], dtype=np.int64).reshape(-1, 7)
        found = (counts, len(rows) > MAX_PAIRS)
        cache.set(key, found, CACHE_SECONDS)
    return found


def adjudicated_labels(*, study: Study) -> dict[tuple[int, int], str]:
    return {
        (a, b): label
        for a, b, label in Adjudication.objects.filter(study=study).values_list(
            "item_a_id", "item_b_id", "label"
        )
    }


def _decided(counts: np.ndarray, decided: dict) -> np.ndarray:
    """Per row: 1 comparable, 0 incomparable adjudicated, -1 not adjudicated."""
    codes = {Label.COMPARABLE: 1, Label.INCOMPARABLE: 0}
    return np.fromiter(
        (codes.get(decided.get((int(a), int(b))), -1) for a, b in counts[:, :2]),
        dtype=np.int8,
        count=len(counts),
    )


def _p_comparable(study: Study, counts: np.ndarray) -> tuple[np.ndarray | None, str]:
    """P(comparable) of each row under the current metric (one read of the rows involved) and
    the metric's name; (None, "") when the study has none."""
    metric = current_metric(study_id=study.pk)
    if metric is None:
        return None, ""
    name = f"{metric.label} (version #{metric.version_id})"
    if not len(counts):  # (every disagreement resolved: the metric is still there)
        return None, name
    unique, inverse = np.unique(counts[:, [ROW_A, ROW_B]].T.ravel(), return_inverse=True)
    vectors = study.space.vectors(unique)
    z = vectors[inverse[: len(counts)]] - vectors[inverse[len(counts) :]]
    return np.asarray(metric.p_comparable(z), dtype=np.float64), name


def review_pairs(
    *,
    study: Study,
    agreement: str = Agreement.OPEN,
    label: str = "",
    annotator_id: int | None = None,
    limit: int = 100,
) -> Review:
    """The shared pairs the filters keep, most important first (the first ``limit``), and the
    study's progress. Vectorised: nothing per pair but the ``limit`` pairs returned."""
    counts, truncated = answer_counts(study=study)
    decided = _decided(counts, adjudicated_labels(study=study))
    labels = counts[:, [NC, NI, NU]]
    answers = labels.sum(axis=1)
    disagreed = labels.max(axis=1, initial=0) < answers
    keep = {
        Agreement.OPEN: disagreed & (decided < 0),
        Agreement.RESOLVED: decided >= 0,
        Agreement.DISAGREED: disagreed,
        Agreement.AGREED: ~disagreed,
    }[agreement]
    if label:
        keep &= labels[:, [Label.COMPARABLE, Label.INCOMPARABLE, Label.UNSURE].index(label)] > 0
    if annotator_id is not None:
        theirs = set(
            PairJudgment.objects.filter(study=study, annotator_id=annotator_id).values_list(
                "item_a_id", "item_b_id"
            )
        )
        keep &= np.fromiter(
            ((int(a), int(b)) in theirs for a, b in counts[:, :2]), dtype=bool, count=len(counts)
        )
    kept = np.flatnonzero(keep)
    p, metric = _p_comparable(study, counts[kept])
    uncertainty = np.zeros(kept.size) if p is None else np.abs(p - 0.5)
    split = 1 - labels[kept].max(axis=1, initial=0) / np.maximum(answers[kept], 1)
    # Most uncertain first; then the most even split, more answers, the pair's ids.
    order = np.lexsort((counts[kept, B], counts[kept, A], -answers[kept], -split, uncertainty))[
        :limit
    ]
    names = {1: Label.COMPARABLE.value, 0: Label.INCOMPARABLE.value}
    pairs = [
        SharedPair(
            *(int(x) for x in counts[kept[i], [A, B, NC, NI, NU]]),
            adjudicated=names.get(int(decided[kept[i]])),
            p_comparable=None if p is None else float(p[i]),
        )
        for i in order
    ]
    if pairs:  # gold pairs marked: one query over the pairs returned
        ids = {i for p in pairs for i in (p.item_a, p.item_b)}
        gold = GoldPair.objects.filter(study=study, item_a__in=ids, item_b__in=ids)
        labels_of = {(a, b): g for a, b, g in gold.values_list("item_a_id", "item_b_id", "label")}
        for pair in pairs:
            pair.gold = labels_of.get((pair.item_a, pair.item_b))
    return Review(
        pairs=pairs,
        count=int(kept.size),
        shared=len(counts),
        disagreements=int(disagreed.sum()),
        resolved=int((disagreed & (decided >= 0)).sum()),
        metric=metric,
        truncated=truncated,
    )


def keys_attach(pairs: list[SharedPair]) -> list[SharedPair]:
    """Fill the items' keys of ``pairs`` (one query); returns them."""
    ids = {i for p in pairs for i in (p.item_a, p.item_b)}
    keys = dict(Item.objects.filter(pk__in=ids).values_list("pk", "key"))
    for pair in pairs:
        pair.key_a, pair.key_b = keys.get(pair.item_a, ""), keys.get(pair.item_b, "")
    return pairs


def disagreement_progress(*, study: Study) -> tuple[int, int]:
    """(resolved, disagreements) of the study, for the agreement figures."""
    counts, _ = answer_counts(study=study)
    return disagreement_tally(
        counts[:, [A, B]], counts[:, [NC, NI, NU]], adjudicated_labels(study=study)
    )


def disagreement_tally(pairs: np.ndarray, labels: np.ndarray, decided: dict) -> tuple[int, int]:
    """(resolved, disagreements) of pairs (item a, item b) with their label counts: a pair with
    two labels or more is a disagreement, resolved when adjudicated comparable or
    incomparable (``decided``: ``adjudicated_labels``)."""
    disagreed = labels.max(axis=1, initial=0) < labels.sum(axis=1)
    resolved = {
        pair for pair, label in decided.items() if label in (Label.COMPARABLE, Label.INCOMPARABLE)
    }
    if not resolved:
        return 0, int(disagreed.sum())
    found = sum(1 for a, b in pairs[disagreed].tolist() if (a, b) in resolved)
    return found, int(disagreed.sum())


def answering_annotators(*, study: Study):
    """The people who answered in the study (the annotator filter's choices), by name."""
    ids = PairJudgment.objects.filter(study=study, annotator__isnull=False).values("annotator_id")
    return get_user_model().objects.filter(pk__in=ids).order_by("username")


@dataclass
class PairDetail:
    """One pair as the review page shows it: both items, every answer and comment."""

    left: Item
    right: Item
    answers: list[PairJudgment]
    comments: list[PairComment]
    gold: str | None
    adjudication: Adjudication | None


def pair_detail(*, study: Study, item_a: int, item_b: int) -> PairDetail | None:
    """The pair (canonical ids) with its answers and comments; None when nobody answered it."""
    answers = list(
        PairJudgment.objects.filter(study=study, item_a_id=item_a, item_b_id=item_b)
        .select_related("annotator")
        .order_by("id")
    )
    if not answers:
        return None
    items = Item.objects.in_bulk([item_a, item_b])
    attach_spaces(list(items.values()))
    comments = list(
        PairComment.objects.filter(study=study, item_a_id=item_a, item_b_id=item_b)
        .select_related("author")
        .order_by("id")
    )
    gold = (
        GoldPair.objects.filter(study=study, item_a_id=item_a, item_b_id=item_b)
        .values_list("label", flat=True)
        .first()
    )
    adjudication = (
        Adjudication.objects.filter(study=study, item_a_id=item_a, item_b_id=item_b)
        .select_related("decided_by")
        .first()
    )
    return PairDetail(items[item_a], items[item_b], answers, comments, gold, adjudication)


def record_compare(
    left: Item, right: Item, answers: list[PairJudgment] = ()
) -> list[tuple[str, str, str, bool, list[str]]]:
    """Two records field by field as the labelling page compares them (``static/js/label.js:
    renderCompare``): (field, left, right, differs, who cited it as a reason — "name: label"
    per answer of ``answers`` that did); the key column is never marked (the rule:
    ``annotation/reasons.py: differing_fields``)."""
    a, b = left.shown_payload or {}, right.shown_payload or {}
    differing = set(
        differing_fields({"key": left.key, "payload": a}, {"key": right.key, "payload": b})
    )
    cited: dict[str, list[str]] = {}
    for j in answers:
        who = j.annotator.username if j.annotator_id else j.get_source_display()
        for name in j.reasons or []:
            cited.setdefault(name, []).append(f"{who}: {j.label}")
    return [
        (
            name,
            value_text(a.get(name)),
            value_text(b.get(name)),
            name in differing,
            cited.get(name, []),
        )
        for name in dict.fromkeys([*a, *b])
    ]
