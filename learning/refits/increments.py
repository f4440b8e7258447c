"""A refit's inputs kept in the worker's memory and extended by the new answers (issue 30).

After each refit the worker keeps, per study (the last ``MAX_STUDIES``), what it built: the raw
judgment rows it read (``learning/refits/snapshots.py: raw_judgments``), the snapshot, EXPLORE's
observations (``learning/refits/pairs.py``), the version's counts and FACE's pair sums
(``learning/refits/face_fits.py: PairScatter``). The next refit reads the rows after the kept
ones — checked with them against the database's count and checksum, as the cache's files are —
and, when they check and nothing that shapes the arrays changed (the same space, exclusions,
gold pairs and validation share; no adjudication; the "all" policy, where every answer is one
observation), turns only the new rows into snapshot rows, observations and counts and appends
them. Otherwise (a changed, deleted or late answer, other settings, a worker's first refit of
the study) everything is built again from the rows. Either way the result equals a full
snapshot's (tests/learning/refits/test_increments.py).

Cost per refit with the arrays extended: the database's two aggregates (count, checksum) and
the new rows' query, and array appends (memory copies); no sort over all the answers.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, fields

import numpy as np

from learning.refits import cache, snapshots
from learning.refits import pairs as observations
from learning.refits.face_fits import PairScatter
from learning.refits.pairs import KEY_LIMIT, UNSURE, PairData, data_counts, gold_truth, pair_keys

MAX_STUDIES = 2  # studies whose inputs a worker keeps (each ~200 bytes per answer)


@dataclass(frozen=True)
class FitInputs:
    """What a refit fits: the snapshot, the observations, the counts that depend on the
    judgments alone (``pairs.data_counts``), how the judgments were read, whether the arrays
    were extended (rather than built), and FACE's pair sums for these observations."""

    snapshot: snapshots.JudgmentSnapshot
    pairs: PairData
    counts: dict
    read: str
    extended: bool
    scatter: PairScatter


@dataclass(frozen=True)
class _Kept:
    key: tuple
    raw: snapshots.RawRead
    inputs: FitInputs
    pair_keys: np.ndarray | None  # the observations' distinct pair keys, sorted ("all" only)
    annotators: np.ndarray  # the snapshot's distinct annotators (≥ 0), sorted


_KEPT: OrderedDict[str, _Kept] = OrderedDict()


def forget_all() -> None:
    """Drop every kept study (tests)."""
    _KEPT.clear()


def fit_inputs(
    *, study, marks, excluded_annotators: list[int], policy: str, validation_share: float
) -> FitInputs:
    """The refit's inputs up to ``marks``' watermark, extended from the kept ones when it can
    (module docstring)."""
    where = str(cache.study_cache_dir(study))
    kept = _KEPT.pop(where, None)
    gold = snapshots.gold_pairs(study.pk)
    key = (
        study.space_id,
        study.space.dimension,
        policy,
        float(validation_share),
        tuple(excluded_annotators),
        tuple(gold),
        marks.adjudications,
    )
    raw = snapshots.raw_judgments(study, marks, held=None if kept is None else kept.raw)
    ids_small = raw.rows["item_b"].max(initial=0) < KEY_LIMIT  # item_a < item_b
    if (
        kept is not None
        and kept.key == key
        and kept.pair_keys is not None
        and raw.how.startswith("cached")
        and ids_small
    ):
        made = _extended(kept, raw, study.pk, excluded_annotators, gold, validation_share)
    else:
        made = _built(raw, key, study, excluded_annotators, gold, policy, validation_share)
    _KEPT[where] = made
    while len(_KEPT) > MAX_STUDIES:
        _KEPT.popitem(last=False)
    return made.inputs


def _built(raw, key, study, excluded, gold, policy, share) -> _Kept:
    snapshot = snapshots.snapshot_of_raw(
        raw.rows, study_id=study.pk, excluded_annotators=excluded, gold=gold
    )
    pairs = observations.pair_data(snapshot, policy=policy, validation_share=share)
    distinct = None
    if policy == "all" and not key[-1]:  # the arrays can be extended next time
        ordered = np.sort(pair_keys(snapshot.item_a, snapshot.item_b))
        distinct = ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if ordered.size else ordered
    inputs = FitInputs(
        snapshot=snapshot,
        pairs=pairs,
        counts=data_counts(snapshot, pairs),
        read=raw.how,
        extended=False,
        scatter=PairScatter(study.space.dimension),
    )
    annotators = np.unique(snapshot.annotator[snapshot.annotator >= 0])
    return _Kept(key, raw, inputs, distinct, annotators)


def _extended(kept: _Kept, raw, study_id: int, excluded, gold, share) -> _Kept:
    """``kept``'s inputs with the rows of ``raw`` after kept's own (policy "all")."""
    start = kept.raw.rows["id"].size
    new_raw = {k: v[start:] for k, v in raw.rows.items()}
    part = snapshots.snapshot_of_raw(
        new_raw, study_id=study_id, excluded_annotators=excluded, gold=gold
    )
    before = kept.inputs
    snapshot = snapshots.JudgmentSnapshot(
        **{
            f.name: np.concatenate([getattr(before.snapshot, f.name), getattr(part, f.name)])
            for f in fields(snapshots.JudgmentSnapshot)
        }
    )
    # The pair of an observation is the rank of its key among the distinct keys: the keys new
    # here shift the ranks above them.
    keys = pair_keys(part.item_a, part.item_b)
    at = np.searchsorted(kept.pair_keys, keys)
    known = at < kept.pair_keys.size
    known[known] = kept.pair_keys[at[known]] == keys[known]
    added = np.unique(keys[~known])
    old_pair = before.pairs.pair
    distinct = kept.pair_keys
    if added.size:
        where = np.searchsorted(kept.pair_keys, added)
        shift = np.cumsum(np.bincount(where, minlength=kept.pair_keys.size + 1))[:-1]
        old_pair = old_pair + shift[old_pair]
        distinct = np.insert(kept.pair_keys, where, added)
    unit = observations.pair_hash_unit(part.item_a, part.item_b)
    old = before.pairs
    pairs = PairData(
        row_a=np.concatenate([old.row_a, part.row_a]),
        row_b=np.concatenate([old.row_b, part.row_b]),
        y=np.concatenate([old.y, np.where(part.label == UNSURE, 0.5, part.label.astype(float))]),
        held_out=np.concatenate([old.held_out, unit < share]),
        hash=np.concatenate([old.hash, unit]),
        annotator=np.concatenate([old.annotator, part.annotator]),
        pair=np.concatenate([old_pair, np.searchsorted(distinct, keys)]),
        gold=np.concatenate([old.gold, gold_truth(part.gold, len(part))]),
    )
    annotators = np.union1d(kept.annotators, part.annotator[part.annotator >= 0])
    labels = np.bincount(part.label, minlength=3)
    counts = before.counts | {
        "judgments": len(snapshot),
        "comparable": before.counts["comparable"] + int(labels[1]),
        "incomparable": before.counts["incomparable"] + int(labels[0]),
        "unsure": before.counts["unsure"] + int(labels[2]),
        "pairs_distinct": int(distinct.size),
        "observations": len(pairs),
        "held_out": before.counts["held_out"] + int((unit < share).sum()),
        "annotators": int(annotators.size),
        "imported": before.counts["imported"] + int((part.annotator < 0).sum()),
    }
    inputs = FitInputs(snapshot, pairs, counts, raw.how, True, before.scatter)
    return _Kept(kept.key, raw, inputs, distinct, annotators)
