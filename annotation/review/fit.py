"""What the fit reads of a study's adjudications — the one place where an adjudicated label
replaces the raw answers to its pair.

``learning/refits/snapshots.py`` reads the judgments through :func:`fit_rows` (SQL) or, from
judgment arrays it already holds, :func:`fit_arrays` (numpy, the same rows), and puts
:func:`adjudication_mark` in its data marks, so that a new or changed decision is new data
for the next refit (the refit itself is requested by ``annotation.hooks.feedback_changed``).
"""

from __future__ import annotations

import numpy as np
from django.db.models import Count, Exists, Expression, Max, OuterRef, QuerySet

from annotation.models import Adjudication, Label, LabelCode, PairJudgment

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


def pair_keys(item_a: np.ndarray, item_b: np.ndarray, top: int) -> np.ndarray:
    """One int64 per pair (item ids at most ``top``)."""
    return item_a.astype(np.int64) * (int(top) + 1) + item_b.astype(np.int64)


def fit_arrays(rows: dict[str, np.ndarray], *, study_id: int) -> dict[str, np.ndarray]:
    """:func:`fit_rows` on judgments already read as arrays in id order (keys ``id item_a
    item_b row_a row_b label annotator gold``; ``label`` and ``gold`` as ``LabelCode``, -1 for no
    annotator or no gold label): less every answer to an adjudicated pair, plus one row per
    adjudicated pair among them — id ``-adjudication id``, annotator -1, gold -1. One query."""
    settled = list(
        Adjudication.objects.filter(study_id=study_id)
        .order_by("id")
        .values_list("id", "item_a_id", "item_b_id", "item_a__row", "item_b__row", "label")
    )
    if not settled:
        return rows
    ids, item_a, item_b, row_a, row_b, labels = (np.asarray(c) for c in zip(*settled, strict=True))
    top = max(int(item_a.max()), int(item_b.max()), int(rows["item_b"].max(initial=0)))
    top = max(top, int(rows["item_a"].max(initial=0)))
    answered = pair_keys(rows["item_a"], rows["item_b"], top)
    decided = pair_keys(item_a, item_b, top)
    keep = ~np.isin(answered, decided)
    among = np.isin(decided, answered)
    codes = np.asarray([LabelCode.of(Label(x)) for x in labels], dtype=np.int8)
    none = np.full(int(among.sum()), -1, dtype=np.int64)
    extra = {
        "id": -ids[among].astype(np.int64),
        "item_a": item_a[among].astype(np.int64),
        "item_b": item_b[among].astype(np.int64),
        "row_a": row_a[among].astype(np.int64),
        "row_b": row_b[among].astype(np.int64),
        "label": codes[among],
        "annotator": none,
        "gold": none.astype(np.int8),
    }
    return {k: np.concatenate([rows[k][keep], extra[k]]).astype(rows[k].dtype) for k in extra}


def adjudication_mark(*, study_id: int) -> str:
    """ "<count>:<highest id>" of the study's adjudications ("" when none): it changes with every
    decision made, changed or taken back (a changed decision is a new row)."""
    found = Adjudication.objects.filter(study_id=study_id).aggregate(n=Count("id"), top=Max("id"))
    return f"{found['n']}:{found['top']}" if found["n"] else ""
