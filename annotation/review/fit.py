"""What the fit reads of a study's adjudications — the one place where an adjudicated label
replaces the raw answers to its pair.

``learning/refits/snapshots.py`` reads the judgments through :func:`fit_rows`, and puts
:func:`adjudication_mark` in its data marks, so that a new or changed decision is new data
for the next refit (the refit itself is requested by ``annotation.hooks.feedback_changed``).
"""

from __future__ import annotations

from django.db.models import Count, Exists, Expression, Max, OuterRef, QuerySet

from annotation.models import Adjudication, PairJudgment

# The row layout of the judgment snapshot: id, item a, item b, their matrix rows, label,
# annotator id (None: not a person's answer), the gold label (None: not a gold answer).
FIELDS = ("id", "item_a_id", "item_b_id", "item_a__row", "item_b__row", "label", "annotator_id")


def fit_rows(judgments: QuerySet[PairJudgment], *, study_id: int, gold: Expression) -> list[tuple]:
    """The rows the fit reads: ``judgments`` in id order (``gold``: the expression of their
    gold label), less every answer to an adjudicated pair, plus one row per adjudicated pair
    among them with its adjudicated label — id ``-adjudication id``, no annotator, not gold.
    Two queries."""
    decided = Adjudication.objects.filter(
        study_id=study_id, item_a=OuterRef("item_a"), item_b=OuterRef("item_b")
    )
    raw = list(
        judgments.filter(~Exists(decided))
        .annotate(gold=gold)
        .order_by("id")
        .values_list(*FIELDS, "gold")
    )
    answered = judgments.filter(item_a=OuterRef("item_a"), item_b=OuterRef("item_b"))
    settled = (
        Adjudication.objects.filter(study_id=study_id)
        .filter(Exists(answered))
        .order_by("id")
        .values_list("id", "item_a_id", "item_b_id", "item_a__row", "item_b__row", "label")
    )
    return raw + [(-i, a, b, ra, rb, label, None, None) for i, a, b, ra, rb, label in settled]


def adjudication_mark(*, study_id: int) -> str:
    """ "<count>:<highest id>" of the study's adjudications ("" when none): it changes with every
    decision made, changed or taken back (a changed decision is a new row)."""
    found = Adjudication.objects.filter(study_id=study_id).aggregate(n=Count("id"), top=Max("id"))
    return f"{found['n']}:{found['top']}" if found["n"] else ""
