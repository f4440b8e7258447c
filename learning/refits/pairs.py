"""EXPLORE's observations from a judgment snapshot, and the counts stored on a version.

Repeated answers to a pair follow the study's policy (``StudyLearningSettings.RepeatPolicy``):

* ``all``: every answer is one observation; an "unsure" answer counts as half an observation
  each way (the label y = 1/2, i.e. the average of the comparable and incomparable terms of
  the likelihood). EXPLORE's likelihood is robust to such label noise.
* ``majority``: one observation per pair, the majority of its comparable/incomparable answers;
  ties and pairs with only "unsure" answers are dropped.
* ``drop_unsure``: every comparable/incomparable answer is one observation; "unsure" dropped.

A pair is one int64 key (``pair_keys``), ordered as the pairs (a, b) lexicographically. Distinct
keys are found by sorting (``np.unique`` with ``return_inverse``, or ``np.sort``): numpy 2's
hash-based ``np.unique`` of many distinct values is several times slower (10⁶ keys on this
machine, 2026-11-26: 2.0 s against 0.23 s with the inverse and 0.10 s for a sort).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.labelling.strategies import pair_hash_unit
from annotation.models import LabelCode
from learning.refits.snapshots import JudgmentSnapshot

UNSURE = LabelCode.UNSURE
KEY_SHIFT = 1 << 32  # pair_keys: a · KEY_SHIFT + b while every id is below KEY_LIMIT
KEY_LIMIT = 1 << 31


@dataclass(frozen=True)
class PairData:
    """EXPLORE observations as row indices into the embedding matrix."""

    row_a: np.ndarray
    row_b: np.ndarray
    y: np.ndarray  # float: 1 comparable, 0 incomparable, 0.5 unsure under "all"
    held_out: np.ndarray  # bool, fixed by the pair's hash
    hash: np.ndarray  # the pair's hash in [0, 1) (validation folds)
    # Per observation when each is one answer (not under "majority"): who gave it (-1:
    # imported), the pair (an index shared by the answers to one pair: the rank of its key
    # among the distinct pairs) and the gold truth (1/0; NaN when the pair is not gold). None
    # under "majority".
    annotator: np.ndarray | None = None
    pair: np.ndarray | None = None
    gold: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.y.size)

    def take(self, index: np.ndarray, pair: np.ndarray | None) -> PairData:
        """The observations ``index`` (a mask or indices) as PairData of their own, with
        ``pair`` their pair indices (None when these observations have none)."""

        def pick(a):
            return None if a is None else a[index]

        return PairData(
            row_a=self.row_a[index],
            row_b=self.row_b[index],
            y=self.y[index],
            held_out=self.held_out[index],
            hash=self.hash[index],
            annotator=pick(self.annotator),
            pair=pair,
            gold=pick(self.gold),
        )


def pair_keys(item_a: np.ndarray, item_b: np.ndarray) -> np.ndarray:
    """One int64 per pair, ordered as the pairs (a, b) lexicographically (ids ≥ 0): a 1-D
    sort of these is many times faster than ``np.unique(..., axis=0)`` of the rows. The same
    key for a pair whatever the other pairs while every id is below ``KEY_LIMIT``."""
    top = int(max(item_a.max(initial=0), item_b.max(initial=0))) + 1
    shift = KEY_SHIFT if top <= KEY_LIMIT else top
    return item_a.astype(np.int64) * shift + item_b.astype(np.int64)


def distinct_count(keys: np.ndarray) -> int:
    """How many distinct values ``keys`` holds (by sorting: module docstring)."""
    if keys.size == 0:
        return 0
    ordered = np.sort(keys)
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1


def gold_truth(codes: np.ndarray | None, size: int) -> np.ndarray:
    """Gold truth per observation from the snapshot's gold ``LabelCode`` (NaN: not gold)."""
    gold = np.full(size, np.nan)
    if codes is not None:
        known = (codes == 0) | (codes == 1)
        gold[known] = codes[known]
    return gold


def pair_data(snapshot: JudgmentSnapshot, *, policy: str, validation_share: float) -> PairData:
    """Observations for EXPLORE under the repeat-answer policy (vectorised)."""
    label = snapshot.label
    if policy == "majority":
        keep = label != UNSURE
        a, b, lab = snapshot.item_a[keep], snapshot.item_b[keep], label[keep]
        ra, rb = snapshot.row_a[keep], snapshot.row_b[keep]
        _, first, inverse = np.unique(pair_keys(a, b), return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        yes = np.bincount(inverse, weights=(lab == 1), minlength=first.size)
        no = np.bincount(inverse, weights=(lab == 0), minlength=first.size)
        decided = yes != no
        item_a, item_b = a[first][decided], b[first][decided]
        row_a, row_b = ra[first][decided], rb[first][decided]
        y = (yes[decided] > no[decided]).astype(np.float64)
        unit = pair_hash_unit(item_a, item_b)
        return PairData(row_a=row_a, row_b=row_b, y=y, held_out=unit < validation_share, hash=unit)
    keep = label != UNSURE if policy == "drop_unsure" else np.ones(label.size, dtype=bool)
    item_a, item_b = snapshot.item_a[keep], snapshot.item_b[keep]
    row_a, row_b = snapshot.row_a[keep], snapshot.row_b[keep]
    y = np.where(label[keep] == UNSURE, 0.5, label[keep].astype(np.float64))
    unit = pair_hash_unit(item_a, item_b)
    gold = gold_truth(None if snapshot.gold is None else snapshot.gold[keep], y.size)
    if y.size:
        pair = np.unique(pair_keys(item_a, item_b), return_inverse=True)[1]
    else:
        pair = np.empty(0, dtype=np.int64)
    return PairData(
        row_a=row_a,
        row_b=row_b,
        y=y,
        held_out=unit < validation_share,
        hash=unit,
        annotator=snapshot.annotator[keep],
        pair=pair.ravel(),
        gold=gold,
    )


def data_counts(snapshot: JudgmentSnapshot, pairs: PairData) -> dict:
    """The counts of a version that depend on the judgments alone (the refit adds the groups)."""
    labels = np.bincount(snapshot.label, minlength=3)
    annotators = np.unique(snapshot.annotator[snapshot.annotator >= 0])  # a few distinct
    return {
        "judgments": len(snapshot),
        "comparable": int(labels[1]),
        "incomparable": int(labels[0]),
        "unsure": int(labels[2]),
        "pairs_distinct": distinct_count(pair_keys(snapshot.item_a, snapshot.item_b)),
        "observations": len(pairs),
        "held_out": int(pairs.held_out.sum()),
        "annotators": int(annotators.size),
        # Answers with no annotator (imports) apart from the adjudicated labels (negative ids,
        # no annotator either: annotation/review/fit.py), which are no imports.
        "imported": int(((snapshot.annotator < 0) & (snapshot.ids > 0)).sum()),
        "adjudicated": int((snapshot.ids < 0).sum()),
    }
