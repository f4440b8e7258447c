"""Reads of the adjudication page and API: every pair answered two or more times with its label
counts (one aggregate query), filtered, and ordered by how much it matters to the fit.

The order: under the study's current metric (``annotation.hooks.current_metric``, learning's
published version, else its latest), pairs whose P(comparable) is nearest 0.5 first — the
pairs the metric is least sure of; without a metric, the most evenly split pairs first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Count, Max, Q

from annotation.hooks import current_metric
from annotation.models import Adjudication, GoldPair, Label, PairComment, PairJudgment, Study
from spaces.models import Item, attach_spaces

MAX_PAIRS = 50_000  # shared pairs read per request (the order needs them all)


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
    row_a: int
    row_b: int
    comparable: int
    incomparable: int
    unsure: int
    adjudicated: str | None = None  # the adjudicated label
    p_comparable: float | None = None  # under the current metric
    key_a: str = ""  # the items' keys, filled for the pairs listed (``keys_attach``)
    key_b: str = ""

    @property
    def answers(self) -> int:
        return self.comparable + self.incomparable + self.unsure

    @property
    def disagreed(self) -> bool:
        return max(self.comparable, self.incomparable, self.unsure) < self.answers

    @property
    def split(self) -> float:
        """0 when everyone agreed, up to 2/3 (three labels, evenly)."""
        return 1 - max(self.comparable, self.incomparable, self.unsure) / self.answers

    @property
    def ref(self) -> str:
        return f"{self.item_a}-{self.item_b}"

    def count_of(self, label: str) -> int:
        return getattr(self, label)


@dataclass
class Review:
    pairs: list[SharedPair]  # filtered, most important first
    shared: int  # pairs answered two or more times
    disagreements: int
    resolved: int  # disagreements with an adjudicated label
    metric: str = ""  # the metric that ordered them ("" when none)
    truncated: bool = False
    filters: dict = field(default_factory=dict)


def shared_pairs(*, study: Study) -> tuple[list[SharedPair], bool]:
    """Every pair of the study answered two or more times (people and imports), with its
    adjudicated label: one grouped query and one over the adjudications."""
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
    truncated = len(rows) > MAX_PAIRS
    decided = adjudicated_labels(study=study)
    pairs = [SharedPair(*row[:7], adjudicated=decided.get(row[:2])) for row in rows[:MAX_PAIRS]]
    return pairs, truncated


def adjudicated_labels(*, study: Study) -> dict[tuple[int, int], str]:
    return {
        (a, b): label
        for a, b, label in Adjudication.objects.filter(study=study).values_list(
            "item_a_id", "item_b_id", "label"
        )
    }


def _metric_order(study: Study, pairs: list[SharedPair]) -> str:
    """Fill ``p_comparable`` under the current metric (one read of the rows involved); its
    name, or "" when the study has none."""
    metric = current_metric(study_id=study.pk)
    if metric is None or not pairs:
        return ""
    rows_a = np.fromiter((p.row_a for p in pairs), dtype=np.int64, count=len(pairs))
    rows_b = np.fromiter((p.row_b for p in pairs), dtype=np.int64, count=len(pairs))
    unique, inverse = np.unique(np.concatenate([rows_a, rows_b]), return_inverse=True)
    vectors = study.space.vectors(unique)
    z = vectors[inverse[: len(pairs)]] - vectors[inverse[len(pairs) :]]
    for pair, p in zip(pairs, metric.p_comparable(z), strict=True):
        pair.p_comparable = float(p)
    return f"{metric.label} (version #{metric.version_id})"


def _importance(pair: SharedPair) -> tuple:
    uncertainty = 0.0 if pair.p_comparable is None else abs(pair.p_comparable - 0.5)
    return (uncertainty, -pair.split, -pair.answers, pair.item_a, pair.item_b)


def review_pairs(
    *,
    study: Study,
    agreement: str = Agreement.OPEN,
    label: str = "",
    annotator_id: int | None = None,
) -> Review:
    """The shared pairs the filters keep, most important first, and the study's progress."""
    pairs, truncated = shared_pairs(study=study)
    disagreed = [p for p in pairs if p.disagreed]
    resolved = sum(p.adjudicated is not None for p in disagreed)
    kept = {
        Agreement.OPEN: [p for p in disagreed if p.adjudicated is None],
        Agreement.RESOLVED: [p for p in pairs if p.adjudicated is not None],
        Agreement.DISAGREED: disagreed,
        Agreement.AGREED: [p for p in pairs if not p.disagreed],
    }[agreement]
    if label:
        kept = [p for p in kept if p.count_of(label)]
    if annotator_id is not None:
        theirs = set(
            PairJudgment.objects.filter(study=study, annotator_id=annotator_id).values_list(
                "item_a_id", "item_b_id"
            )
        )
        kept = [p for p in kept if (p.item_a, p.item_b) in theirs]
    metric = _metric_order(study, kept)
    kept.sort(key=_importance)
    return Review(
        pairs=kept,
        shared=len(pairs),
        disagreements=len(disagreed),
        resolved=resolved,
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
    pairs, _ = shared_pairs(study=study)
    disagreed = [p for p in pairs if p.disagreed]
    return sum(p.adjudicated is not None for p in disagreed), len(disagreed)


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


def record_compare(left: Item, right: Item) -> list[tuple[str, str, str, bool]]:
    """Two records field by field as the labelling page compares them (``static/js/label.js:
    renderCompare``): (field, left, right, differs); the key column is never marked."""
    a, b = left.shown_payload or {}, right.shown_payload or {}

    def text(value) -> str:
        return "" if value is None else str(value)

    rows = []
    for name in dict.fromkeys([*a, *b]):
        is_key = text(a.get(name)) == left.key and text(b.get(name)) == right.key
        differs = not is_key and text(a.get(name)) != text(b.get(name))
        rows.append((name, text(a.get(name)), text(b.get(name)), differs))
    return rows
