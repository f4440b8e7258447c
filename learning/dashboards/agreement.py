"""Inter-annotator agreement of a study from two aggregate queries, whatever its size.

The database reduces the answers to small tables, numpy and the libraries do the rest:

* per (annotator, label, *pattern*) counts, where a pair's pattern is how many answers it got
  of each label (i, c, u: LabelCode order) — pairs answered by two or more people only. This gives the
  leave-one-out majority of every answer, and (divided by the pattern's size) how many pairs
  have each pattern, which is all Krippendorff's α needs (``value_counts``);
* per (annotator, annotator, label, label) counts over the pairs both answered — their
  confusion matrices, from which Cohen's κ is computed by scikit-learn on the equivalent
  label vectors (κ does not depend on the order of the pairs).

Nothing proportional to the number of answers crosses into Python: at a million answers the
two queries return a few hundred rows. Answers by people only, gold answers excluded.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import krippendorff
import numpy as np
from django.db import connection
from sklearn.metrics import cohen_kappa_score

from annotation.models import Label, LabelCode, PairJudgment, Source

LABELS = sorted(Label, key=LabelCode.of)  # index = LabelCode
CODE = {label.value: int(LabelCode.of(label)) for label in LABELS}
MIN_KAPPA_OVERLAP = 5  # shared pairs below which κ of two annotators is not reported


@dataclass
class Agreement:
    alpha: float | None = None
    units: int = 0  # pairs answered by two or more people
    kappas: list[tuple[int, int, int, float | None]] = field(default_factory=list)
    compared: dict[int, int] = field(default_factory=dict)  # answers with a decided majority
    agreed: dict[int, int] = field(default_factory=dict)
    mean_kappa: dict[int, float] = field(default_factory=dict)


def _people_cte() -> tuple[str, list]:
    table = connection.ops.quote_name(PairJudgment._meta.db_table)
    sql = (
        f"people AS (SELECT annotator_id AS u, item_a_id AS a, item_b_id AS b, label "
        f"FROM {table} WHERE study_id = %s AND source = %s AND annotator_id IS NOT NULL "
        f"AND is_gold = %s)"
    )
    return sql, [Source.ANNOTATED.value, False]


def patterns_query(study_id: int) -> tuple[str, list]:
    """SQL and parameters of the rows (annotator, label, nc, ni, nu, answers) over pairs with
    two or more answers. It joins the answers with their pairs: run it under
    ``learning.dashboards.figures.whole_study_plans`` on PostgreSQL."""
    people, params = _people_cte()
    sums = ", ".join(
        f"SUM(CASE WHEN label = %s THEN 1 ELSE 0 END) AS n{i}" for i in range(len(LABELS))
    )
    sql = (
        f"WITH {people}, units AS (SELECT a, b, {sums} FROM people GROUP BY a, b "
        f"HAVING COUNT(*) >= 2) "
        f"SELECT p.u, p.label, s.n0, s.n1, s.n2, COUNT(*) FROM people p "
        f"JOIN units s ON p.a = s.a AND p.b = s.b GROUP BY p.u, p.label, s.n0, s.n1, s.n2"
    )
    return sql, [study_id, *params, *[label.value for label in LABELS]]


def confusions_query(study_id: int) -> tuple[str, list]:
    """SQL and parameters of the rows (annotator, other annotator, label, other's label,
    pairs), annotator < other: a self-join on the pair, like ``patterns_query``."""
    people, params = _people_cte()
    sql = (
        f"WITH {people} SELECT p.u, q.u, p.label, q.label, COUNT(*) FROM people p "
        f"JOIN people q ON p.a = q.a AND p.b = q.b AND p.u < q.u "
        f"GROUP BY p.u, q.u, p.label, q.label"
    )
    return sql, [study_id, *params]


def _rows(query: tuple[str, list]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(*query)
        return cursor.fetchall()


def _patterns_by_answer(study_id: int) -> np.ndarray:
    rows = _rows(patterns_query(study_id))
    return np.array([(u, CODE[label], *rest) for u, label, *rest in rows], dtype=np.int64)


def _confusions(study_id: int) -> np.ndarray:
    rows = _rows(confusions_query(study_id))
    return np.array([(u, v, CODE[lu], CODE[lv], n) for u, v, lu, lv, n in rows], dtype=np.int64)


def study_agreement(study_id: int) -> Agreement:
    found = Agreement()
    rows = _patterns_by_answer(study_id)
    if rows.size == 0:
        return found
    users, label, patterns, answers = rows[:, 0], rows[:, 1], rows[:, 2:5], rows[:, 5]

    # Krippendorff's α: one value_counts row per pair; a pattern of size m is seen m times
    # (once per answer) in the rows, so its number of pairs is answers / m.
    unique, inverse = np.unique(patterns, axis=0, return_inverse=True)
    per_pattern = np.bincount(inverse.ravel(), weights=answers) / unique.sum(axis=1)
    units = np.rint(per_pattern).astype(np.int64)
    found.units = int(units.sum())
    value_counts = np.repeat(unique, units, axis=0)
    alpha = float(krippendorff.alpha(value_counts=value_counts, level_of_measurement="nominal"))
    found.alpha = None if np.isnan(alpha) else alpha

    # Leave-one-out majority: the other answers to the pair, without this one.
    others = patterns - np.eye(len(LABELS), dtype=np.int64)[label]
    top = others.max(axis=1)
    decided = (others.sum(axis=1) > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agrees = decided & (others.argmax(axis=1) == label)
    for user_id in np.unique(users):
        mine = users == user_id
        found.compared[int(user_id)] = int(answers[mine & decided].sum())
        found.agreed[int(user_id)] = int(answers[mine & agrees].sum())

    _kappas(study_id, found)
    return found


def _kappas(study_id: int, found: Agreement) -> None:
    rows = _confusions(study_id)
    if rows.size == 0:
        return
    per_user: dict[int, list[float]] = {}
    pair_keys, inverse = np.unique(rows[:, :2], axis=0, return_inverse=True)
    inverse = inverse.ravel()
    for index, (u, v) in enumerate(pair_keys):
        cells = rows[inverse == index]
        overlap = int(cells[:, 4].sum())
        kappa = None
        if overlap >= MIN_KAPPA_OVERLAP:
            first = np.repeat(cells[:, 2], cells[:, 4])
            second = np.repeat(cells[:, 3], cells[:, 4])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # undefined κ is NaN
                value = cohen_kappa_score(first, second, labels=[0, 1, 2])
            kappa = None if np.isnan(value) else float(value)
        found.kappas.append((int(u), int(v), overlap, kappa))
        if kappa is not None:
            per_user.setdefault(int(u), []).append(kappa)
            per_user.setdefault(int(v), []).append(kappa)
    found.mean_kappa = {user: float(np.mean(values)) for user, values in per_user.items()}
