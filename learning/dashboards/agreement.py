"""Inter-annotator agreement of a study from one read of its answers, whatever its size.

The answers by people (``source=annotated``) cross into numpy once, as six integer columns —
annotator, item a, item b, label code (LabelCode order), elapsed ms, gold — through PostgreSQL's
binary ``COPY`` (74-byte rows parsed by one ``np.frombuffer``; other databases fetch the rows).
numpy then gives each annotator's median time per answer (gold answers included) and, gold
answers excluded, groups them by pair (one sort) to compute:

* per pair answered by two or more people, how many answers it got of each label: its row of
  ``value_counts``, which is all Krippendorff's α needs (nominal; computed as the
  ``krippendorff`` package computes it, tested equal);
* for every answer, the leave-one-out majority of its pair (the most frequent label among the
  *other* answers; none on a tie) — per annotator, how many answers had one and agreed with it;
* per (annotator, annotator) the confusion matrix over the pairs both answered, from which
  Cohen's κ is computed as scikit-learn's ``cohen_kappa_score`` computes it from the label
  vectors (tested equal).

At a million answers this replaced two self-joins on the pair (8.5 and 5.4 s on the loaded
2-core machine, 14 s together) by one scan and a sort (docs/dashboards.md, docs/scaling.md).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from annotation.models import Label, LabelCode, PairJudgment, Source

LABELS = sorted(Label, key=LabelCode.of)  # index = LabelCode
CODE = {label.value: int(LabelCode.of(label)) for label in LABELS}
MIN_KAPPA_OVERLAP = 5  # shared pairs below which κ of two annotators is not reported
COLUMNS = 6  # annotator, item a, item b, label code, elapsed ms (-1: not timed), gold (0/1)
_COPY_HEADER = 19  # PGCOPY signature (11), flags (4), header extension length (4)
_ROW = np.dtype(
    [("n", ">i2")] + [(f"f{i}", [("len", ">i4"), ("v", ">i8")]) for i in range(COLUMNS)]
)


@dataclass
class Agreement:
    alpha: float | None = None
    units: int = 0  # pairs answered by two or more people
    kappas: list[tuple[int, int, int, float | None]] = field(default_factory=list)
    compared: dict[int, int] = field(default_factory=dict)  # answers with a decided majority
    agreed: dict[int, int] = field(default_factory=dict)
    mean_kappa: dict[int, float] = field(default_factory=dict)
    medians: dict[int, tuple[float, int]] = field(default_factory=dict)  # ms, timed answers


def answers_query(study_id: int) -> tuple[str, list]:
    """SQL and parameters of the rows (see COLUMNS), all bigint, gold answers included."""
    table = connection.ops.quote_name(PairJudgment._meta.db_table)
    cases = " ".join(f"WHEN %s THEN {CODE[label.value]}" for label in LABELS)
    sql = (
        f"SELECT CAST(annotator_id AS BIGINT), CAST(item_a_id AS BIGINT), "
        f"CAST(item_b_id AS BIGINT), CAST(CASE label {cases} END AS BIGINT), "
        f"CAST(COALESCE(elapsed_ms, -1) AS BIGINT), CAST(CASE WHEN is_gold THEN 1 ELSE 0 END "
        f"AS BIGINT) FROM {table} WHERE study_id = %s AND source = %s "
        f"AND annotator_id IS NOT NULL"
    )
    return sql, [*(label.value for label in LABELS), study_id, Source.ANNOTATED.value]


def study_answers(study_id: int) -> np.ndarray:
    """The study's answers by people: an (n, 6) int64 array (see COLUMNS)."""
    sql, params = answers_query(study_id)
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return np.array(rows, dtype=np.int64).reshape(-1, COLUMNS)
    connection.ensure_connection()
    raw = connection.connection  # psycopg 3: COPY binds its parameters on the client
    buffer = io.BytesIO()
    with (
        raw.cursor() as cursor,
        cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy,
    ):
        for block in copy:
            buffer.write(block)
    data = buffer.getbuffer()
    extension = int.from_bytes(data[15:19], "big")
    body = data[_COPY_HEADER + extension : len(data) - 2]  # without the trailer (int16 -1)
    rows = np.frombuffer(body, dtype=_ROW)
    if not all((rows[f"f{i}"]["len"] == 8).all() for i in range(COLUMNS)):
        raise ValueError("an answer with a NULL column or an unknown label")
    return np.stack([rows[f"f{i}"]["v"] for i in range(COLUMNS)], axis=1).astype(np.int64)


def study_agreement(study_id: int) -> Agreement:
    answers = study_answers(study_id)
    found = answers_agreement(answers[answers[:, 5] == 0, :4])  # gold answers: not in κ, α
    found.medians = answer_medians(answers[:, 0], answers[:, 4])
    return found


def answer_medians(users: np.ndarray, elapsed: np.ndarray) -> dict[int, tuple[float, int]]:
    """Per annotator, the median of their timed answers' milliseconds (the mean of the two
    middle values for an even count, as numpy's and PostgreSQL's ``PERCENTILE_CONT(0.5)``) and
    how many were timed; answers with no time (-1) left out."""
    timed = elapsed >= 0
    users, elapsed = users[timed], elapsed[timed]
    order = np.lexsort((elapsed, users))
    users, elapsed = users[order], elapsed[order]
    people, starts, counts = np.unique(users, return_index=True, return_counts=True)
    low = elapsed[starts + (counts - 1) // 2]
    high = elapsed[starts + counts // 2]
    return {
        int(user): ((int(a) + int(b)) / 2, int(n))
        for user, a, b, n in zip(people, low, high, counts, strict=True)
    }


def answers_agreement(answers: np.ndarray) -> Agreement:
    """The figures of an (n, 4) array of answers (annotator, item a, item b, label code)."""
    found = Agreement()
    if answers.shape[0] == 0:
        return found
    order = np.lexsort((answers[:, 0], *_pair_keys(answers[:, 1], answers[:, 2])))
    users, codes = answers[order, 0], answers[order, 3]
    pair = _runs(answers[order, 1], answers[order, 2])  # 0..P-1, sorted by pair then person
    counts = np.bincount(pair * 3 + codes, minlength=(pair[-1] + 1) * 3).reshape(-1, 3)
    unit = counts.sum(axis=1) >= 2
    if not unit.any():
        return found

    # Krippendorff's α: one value_counts row per pair answered twice or more.
    found.units = int(unit.sum())
    found.alpha = nominal_alpha(counts[unit])

    # Leave-one-out majority: the other answers to the pair, without this one.
    mine = unit[pair]
    users, codes, pair = users[mine], codes[mine], pair[mine]
    others = counts[pair] - np.eye(3, dtype=np.int64)[codes]
    top = others.max(axis=1)
    decided = (others.sum(axis=1) > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agrees = decided & (others.argmax(axis=1) == codes)
    people, person = np.unique(users, return_inverse=True)
    person = person.ravel()
    compared = np.bincount(person, weights=decided, minlength=people.size)
    agreed = np.bincount(person, weights=agrees, minlength=people.size)
    for index, user_id in enumerate(people):
        found.compared[int(user_id)] = int(compared[index])
        found.agreed[int(user_id)] = int(agreed[index])

    _kappas(_confusions(pair, person, codes, people), found)
    return found


def _pair_keys(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Sort keys of the pairs for ``np.lexsort`` (last key first): one int64 when ids fit."""
    if min(a.min(), b.min()) >= 0 and max(a.max(), b.max()) < 2**31:
        return ((a << 32) | b,)
    return (b, a)


def _runs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """0, 0, 1, 1, 1, 2, …: the index of each row's pair in rows sorted by pair."""
    new = np.empty(a.size, dtype=bool)
    new[0] = False
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return np.cumsum(new)


def _confusions(pair, person, codes, people) -> np.ndarray:
    """Rows (annotator, other annotator, label, other's label, pairs), annotator < other, over
    every two answers to the same pair by two different people (rows sorted by pair, then
    person)."""
    n = people.size
    keys = []
    for step in range(1, pair.size):  # each answer with the one `step` places on in its pair
        i = np.flatnonzero(pair[step:] == pair[:-step])
        if i.size == 0:
            break
        j = i + step
        keep = person[i] < person[j]  # sorted by person: drop two answers by one person
        i, j = i[keep], j[keep]
        keys.append(((person[i] * n + person[j]) * 3 + codes[i]) * 3 + codes[j])
    key, cells = np.unique(np.concatenate(keys or [np.zeros(0, np.int64)]), return_counts=True)
    left, rest = np.divmod(key, n * 9)
    right, rest = np.divmod(rest, 9)
    lu, lv = np.divmod(rest, 3)
    return np.stack([people[left], people[right], lu, lv, cells], axis=1)


def nominal_alpha(value_counts: np.ndarray) -> float | None:
    """Krippendorff's α (nominal) of a (units, values) table of counts, as the ``krippendorff``
    package computes it (tested equal), in O(units · values²); None where it is undefined (one
    value only). From the coincidences ``o_ck = Σ_u n_uc (n_uk - [c = k]) / (m_u - 1)``:
    ``α = 1 - (n - 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k``."""
    counts = value_counts.astype(np.float64)
    pairable = counts.sum(axis=1) - 1.0
    counts, pairable = counts[pairable > 0], pairable[pairable > 0]
    outer = np.einsum("uc,uk->ck", counts / pairable[:, None], counts)
    coincidences = outer - np.diag((counts / pairable[:, None]).sum(axis=0))
    n_c = coincidences.sum(axis=1)
    n = n_c.sum()
    off = 1.0 - np.eye(counts.shape[1])
    expected = float(np.sum(off * np.outer(n_c, n_c)))
    if expected == 0.0:
        return None
    return float(1.0 - (n - 1.0) * np.sum(off * coincidences) / expected)


def cohen_kappa(confusion: np.ndarray) -> float | None:
    """Cohen's κ of a confusion matrix (rows: the first rater's labels), as scikit-learn's
    ``cohen_kappa_score`` computes it from the label vectors; None where it is undefined (both
    always chose the same single label)."""
    total = confusion.sum()
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / total
    off = 1.0 - np.eye(confusion.shape[0])
    chance = float(np.sum(off * expected))
    if chance == 0.0:
        return None
    return float(1.0 - np.sum(off * confusion) / chance)


def _kappas(rows: np.ndarray, found: Agreement) -> None:
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
            confusion = np.zeros((3, 3))
            np.add.at(confusion, (cells[:, 2], cells[:, 3]), cells[:, 4])
            kappa = cohen_kappa(confusion)
        found.kappas.append((int(u), int(v), overlap, kappa))
        if kappa is not None:
            per_user.setdefault(int(u), []).append(kappa)
            per_user.setdefault(int(v), []).append(kappa)
    found.mean_kappa = {user: float(np.mean(values)) for user, values in per_user.items()}
