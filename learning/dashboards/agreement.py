"""Inter-annotator agreement of a study's answers as integer tallies that new answers extend.

The answers by people (gold answers excluded) are kept sorted by pair — the pair as one int64
key, item a · 2³² + item b — with their annotator and label code (LabelCode order). From them:

* per pair, how many answers it got of each label: the pairs answered two or more times are
  Krippendorff's α's ``value_counts`` (nominal; computed as the ``krippendorff`` package
  computes it, tested equal);
* per annotator, their answers to such pairs, how many of them had a leave-one-out majority
  (the most frequent label among the *other* answers to the pair; none on a tie) and how many
  agreed with it;
* per (annotator, annotator, label, label), on how many pairs the two answered those labels:
  the confusion matrices from which Cohen's κ is computed as scikit-learn's
  ``cohen_kappa_score`` computes it from the label vectors (tested equal).

All three are sums over pairs, so new answers change only their own pairs' terms:
``extend_pairs`` takes the old tallies of the pairs they touch out and puts the new ones in,
and gives arrays equal, element for element, to ``pair_tallies`` of all the answers at once
(tested) — the figures after a burst of answers cost in proportion to the burst
(``learning/dashboards/tallies.py`` keeps them per study). ``durations_medians``: each
annotator's median time per answer from their times kept sorted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MIN_KAPPA_OVERLAP = 5  # shared pairs below which κ of two annotators is not reported
KEY_LIMIT = 2**31  # item ids, annotator ids and milliseconds packed into int64 keys stay below


@dataclass
class Agreement:
    alpha: float | None = None
    units: int = 0  # pairs answered by two or more people
    kappas: list[tuple[int, int, int, float | None]] = field(default_factory=list)
    compared: dict[int, int] = field(default_factory=dict)  # answers with a decided majority
    agreed: dict[int, int] = field(default_factory=dict)
    mean_kappa: dict[int, float] = field(default_factory=dict)
    medians: dict[int, tuple[float, int]] = field(default_factory=dict)  # ms, timed answers


@dataclass
class PairTallies:
    """Answers sorted by (pair key, annotator) and their tallies (module docstring)."""

    keys: np.ndarray  # int64 pair key per answer
    users: np.ndarray  # int64 annotator per answer
    codes: np.ndarray  # int64 LabelCode per answer
    pair_keys: np.ndarray  # int64, each answered pair once, ascending
    pair_counts: np.ndarray  # (pairs, 3) int64: answers of each label
    cells: np.ndarray  # (k, 5) int64 rows (u, v, label of u, label of v, pairs), u < v, sorted
    people: np.ndarray  # (m, 4) int64 rows (annotator, unit answers, compared, agreed), sorted

    ARRAYS = ("keys", "users", "codes", "pair_keys", "pair_counts", "cells", "people")


def pair_key(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One int64 per pair of item ids (a · 2³² + b), ordered as (a, b)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= KEY_LIMIT):
        raise ValueError("item ids beyond 2**31 do not fit the agreement's pair keys")
    return (a << 32) | b


def empty_pairs() -> PairTallies:
    none = np.zeros(0, dtype=np.int64)
    table = [np.zeros((0, width), np.int64) for width in (3, 5, 4)]
    return PairTallies(none, none, none, none, *table)


def pair_tallies(keys: np.ndarray, users: np.ndarray, codes: np.ndarray) -> PairTallies:
    """The tallies of answers (pair keys, annotators, label codes) in any order."""
    order = np.lexsort((users, keys))
    return _tallied(keys[order], users[order], codes[order])


def _tallied(keys: np.ndarray, users: np.ndarray, codes: np.ndarray) -> PairTallies:
    """``pair_tallies`` of answers already sorted by (pair key, annotator)."""
    if keys.size == 0:
        return empty_pairs()
    new = np.empty(keys.size, dtype=bool)
    new[0], new[1:] = True, keys[1:] != keys[:-1]
    pair = np.cumsum(new) - 1  # 0..P-1, sorted by pair then person
    counts = np.bincount(pair * 3 + codes, minlength=(pair[-1] + 1) * 3).reshape(-1, 3)
    none = empty_pairs()
    found = PairTallies(keys, users, codes, keys[new], counts, none.cells, none.people)
    unit = counts.sum(axis=1) >= 2
    if not unit.any():
        return found
    # Leave-one-out majority: the other answers to the pair, without this one.
    mine = unit[pair]
    users, codes, pair = users[mine], codes[mine], pair[mine]
    others = counts[pair] - np.eye(3, dtype=np.int64)[codes]
    top = others.max(axis=1)
    decided = (others.sum(axis=1) > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agrees = decided & (others.argmax(axis=1) == codes)
    people, person = np.unique(users, return_inverse=True)
    person = person.ravel()
    found.people = np.stack(
        [
            people,
            np.bincount(person, minlength=people.size),
            np.bincount(person[decided], minlength=people.size),
            np.bincount(person[agrees], minlength=people.size),
        ],
        axis=1,
    ).astype(np.int64)
    found.cells = _confusions(pair, person, codes, people)
    return found


def extend_pairs(
    tallies: PairTallies, keys: np.ndarray, users: np.ndarray, codes: np.ndarray
) -> PairTallies:
    """``tallies`` with new answers added: equal to ``pair_tallies`` of the old answers and the
    new together. Only the pairs the new answers touch are tallied again."""
    if keys.size == 0:
        return tallies
    touched = np.unique(keys)
    lo = np.searchsorted(tallies.keys, touched, side="left")
    hi = np.searchsorted(tallies.keys, touched, side="right")
    old = _ranges(lo, hi)
    before = _tallied(tallies.keys[old], tallies.users[old], tallies.codes[old])
    after = pair_tallies(
        np.concatenate([before.keys, keys]),
        np.concatenate([before.users, users]),
        np.concatenate([before.codes, codes]),
    )
    kept = [np.delete(getattr(tallies, name), old) for name in ("keys", "users", "codes")]
    at = np.searchsorted(kept[0], after.keys)
    kept = [np.insert(kept[i], at, x) for i, x in enumerate((after.keys, after.users, after.codes))]
    gone = np.searchsorted(tallies.pair_keys, before.pair_keys)
    pair_keys = np.delete(tallies.pair_keys, gone)
    pair_counts = np.delete(tallies.pair_counts, gone, axis=0)
    at = np.searchsorted(pair_keys, after.pair_keys)
    return PairTallies(
        *kept,
        np.insert(pair_keys, at, after.pair_keys),
        np.insert(pair_counts, at, after.pair_counts, axis=0),
        combine([tallies.cells, before.cells, after.cells], [1, -1, 1], keys=4),
        combine([tallies.people, before.people, after.people], [1, -1, 1], keys=1),
    )


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The indices lo[0]..hi[0]-1, lo[1]..hi[1]-1, … in one array."""
    sizes = hi - lo
    if sizes.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return starts + np.arange(sizes.sum())


def combine(tables: list[np.ndarray], signs: list[int], *, keys: int) -> np.ndarray:
    """Rows whose first ``keys`` columns are a key and the rest counts: the signed sum of the
    tables' counts per key, sorted by key; keys whose first count is 0 left out."""
    rows = np.concatenate(
        [
            table * np.r_[[1] * keys, [sign] * (table.shape[1] - keys)]
            for table, sign in zip(tables, signs, strict=True)
        ]
    )
    if rows.shape[0] == 0:
        return rows
    order = np.lexsort(rows[:, :keys].T[::-1])
    rows = rows[order]
    new = np.ones(rows.shape[0], dtype=bool)
    new[1:] = (rows[1:, :keys] != rows[:-1, :keys]).any(axis=1)
    group = np.cumsum(new) - 1
    sums = np.zeros((group[-1] + 1, rows.shape[1] - keys), dtype=np.int64)
    np.add.at(sums, group, rows[:, keys:])
    found = np.concatenate([rows[new, :keys], sums], axis=1)
    return found[found[:, keys] != 0]


def agreement_of(tallies: PairTallies) -> Agreement:
    """α, κ and the majority counts of the tallies (no medians)."""
    found = Agreement()
    unit = tallies.pair_counts.sum(axis=1) >= 2
    if not unit.any():
        return found
    found.units = int(unit.sum())
    found.alpha = nominal_alpha(tallies.pair_counts[unit])
    for user, _, compared, agreed in tallies.people:
        found.compared[int(user)] = int(compared)
        found.agreed[int(user)] = int(agreed)
    _kappas(tallies.cells, found)
    return found


def answers_agreement(answers: np.ndarray) -> Agreement:
    """The figures of an (n, 4) array of answers (annotator, item a, item b, label code)."""
    keys = pair_key(answers[:, 1], answers[:, 2])
    return agreement_of(pair_tallies(keys, answers[:, 0], answers[:, 3]))


def duration_keys(users: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
    """The timed answers (elapsed >= 0) as sorted int64 keys annotator · 2³² + milliseconds."""
    timed = elapsed >= 0
    users, elapsed = users[timed], elapsed[timed]
    if users.size and (users.min() < 0 or users.max() >= KEY_LIMIT or elapsed.max() >= KEY_LIMIT):
        raise ValueError("annotator ids or times beyond 2**31 do not fit the duration keys")
    return np.sort((users << 32) | elapsed)


def durations_medians(keys: np.ndarray) -> dict[int, tuple[float, int]]:
    """Per annotator, the median of their timed answers' milliseconds (the mean of the two
    middle values for an even count, as numpy's and PostgreSQL's ``PERCENTILE_CONT(0.5)``) and
    how many were timed, from ``duration_keys`` (sorted)."""
    if keys.size == 0:
        return {}
    users, elapsed = keys >> 32, keys & (2**32 - 1)
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    counts = np.diff(np.r_[starts, users.size])
    low = elapsed[starts + (counts - 1) // 2]
    high = elapsed[starts + counts // 2]
    return {
        int(user): ((int(a) + int(b)) / 2, int(n))
        for user, a, b, n in zip(users[starts], low, high, counts, strict=True)
    }


def answer_medians(users: np.ndarray, elapsed: np.ndarray) -> dict[int, tuple[float, int]]:
    """``durations_medians`` of answers (annotators, milliseconds; -1: not timed)."""
    return durations_medians(duration_keys(np.asarray(users), np.asarray(elapsed)))


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
