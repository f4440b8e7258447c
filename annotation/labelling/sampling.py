"""Which pair to show an annotator next, without ever scanning all pairs.

In order:

1. **Overlap** — a pair other annotators answered fewer than ``study.overlap`` times and this
   annotator has not, so that agreement can be measured. Looked up in two bounded windows of
   the study's judgments (``SCAN_ROWS`` each, read backwards along the ``(study, id)`` index):
   the newest ones, and a stretch ending at a random earlier id, so that older open pairs come
   back too. Pairs answered by other people there (imports do not count) are counted exactly
   in one query; the fullest open pair goes first.
2. **Gold** — with probability ``study.gold_rate``, a gold pair the annotator has not answered.
3. **Candidate pairs** — an uploaded candidate pair (``CandidatePair``) the annotator has not
   answered: those an audit asked about (higher ``priority``) first, at random within each;
   always while some are left, or with probability ``study.candidate_rate`` (< 1).
4. **The study's strategy** over ``CANDIDATES`` random pairs of the item pool (ids cached per
   process), minus those already answered (one query). ``random``: any of them.
   ``stratified``: their distances under the current metric (Euclidean without one) cut into
   ``STRATA`` equal-width bins of log(1 + d), a non-empty bin at random, then a pair in it
   (over-samples close pairs, rare among random ones). Under the current EXPLORE version (the
   newest judged informative; random without one): ``uncertainty``, the pair whose
   ``P(comparable) = 2 sigmoid(-z^T Sigma z)`` is nearest 0.5; ``targeted``, nearest 0.65 (the
   strategy the label-efficiency benchmark found to pay); ``information``, the largest
   expected information gain about Sigma given the study's newest answers (batch D-optimal);
   the last two with a share of uniform picks (``strategies.py``).
   Every strategy but ``random`` offers **control pairs** only as uniform draws: a share of its
   picks, all of them while the drift flag watches (``strategies.py: control_pick``; reason
   ``control``; ``annotation.hooks.drift_watch``, read once per refill).

Left and right are shuffled per presentation.

:func:`next_pairs` gives ``k`` distinct pairs at once, as ``k`` successive calls of
:func:`next_pair` would, sharing the reads of the refill (overlap windows, gold and candidate
pairs, the annotator's answered pairs; the items in one query): the queue's (``pair_queue.py``).
"""

from __future__ import annotations

from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

import numpy as np
from django.db.models import Exists, OuterRef

from annotation.hooks import current_metric, drift_watch
from annotation.labelling import strategies as picks
from annotation.labelling.selectors import answered_pairs, judged_pairs, skipped_pairs
from annotation.models import CandidatePair, GoldPair, PairJudgment, Source, Study, canonical_pair
from annotation.selectors import newest_first, study_pool
from spaces.models import Item, attach_spaces

CANDIDATES = 256
SCAN_ROWS = 300  # judgments per overlap window (newest, and a random earlier stretch)
OVERLAP_CANDIDATES = 200
STRATA, ATTEMPTS = 5, 4  # distance strata; candidate draws before the strategy gives up
ANSWERED_MAX = 20_000  # a refill loads the annotator's answered pairs once, up to this many
_first_id_cache: dict[int, int] = {}
first_id_cache_clear = _first_id_cache.clear  # (the tests: a rolled-back database reuses ids)


@dataclass
class _Refill:
    """What one :func:`next_pairs` call reads once and its ``k`` choices share."""

    user_id: int
    answered: set | None = None  # the annotator's answered pairs (None: not loaded / too many)
    answered_loaded: bool = False
    overlap: list | None = None  # open overlap pairs, fullest first
    listed: dict = field(default_factory=dict)  # model -> random unanswered pairs
    skipped: set | None = None
    watch: bool | None = None  # annotation.hooks.drift_watch (None: not read yet)


_refill: ContextVar[_Refill | None] = ContextVar("sampling_refill", default=None)


@dataclass(frozen=True)
class NextPair:
    left: Item
    right: Item
    reason: str  # overlap | gold | candidate | control | random | stratified | uncertainty | information | targeted
    p_comparable: float | None = None
    distance: float | None = None
    metric_version_id: int | None = None


def next_pair(
    *,
    study: Study,
    user,
    exclude: tuple[tuple[int, int], ...] | list = (),
    rng: np.random.Generator | None = None,
) -> NextPair | None:
    """The next pair for ``user``; ``exclude`` lists pairs the client holds but has not sent."""
    rng = rng or np.random.default_rng()
    excluded = {canonical_pair(int(a), int(b)) for a, b in exclude}
    refill = _refill.get()
    if refill is not None and refill.skipped is None:
        refill.skipped = skipped_pairs(study=study, user=user)
    skipped = refill.skipped if refill is not None else skipped_pairs(study=study, user=user)
    excluded |= skipped  # passed on: never offered again
    pool = study_pool(study=study)
    if len(pool) < 2:
        return None

    pair = _overlap_pair(study, user, excluded, pool, rng)
    if pair is not None:
        return _present(pair, "overlap", rng)
    if study.gold_rate > 0 and rng.random() < study.gold_rate:
        pair = _listed_pair(GoldPair, study, user, excluded)
        if pair is not None:
            return _present(pair, "gold", rng)
    first = study.candidate_rate >= 1 or rng.random() < study.candidate_rate
    pair = _listed_pair(CandidatePair, study, user, excluded) if first else None
    if pair is not None:
        return _present(pair, "candidate", rng)
    chosen = _strategy_pair(study, user, excluded, pool, rng)
    if chosen is None and not first:  # the strategy has nothing: a candidate after all
        pair = _listed_pair(CandidatePair, study, user, excluded)
        chosen = _present(pair, "candidate", rng) if pair is not None else None
    return chosen


def next_pairs(
    *,
    study: Study,
    user,
    k: int,
    exclude: tuple[tuple[int, int], ...] | list = (),
    rng: np.random.Generator | None = None,
) -> list[NextPair]:
    """Up to ``k`` distinct pairs for ``user``, in order: what ``k`` calls of :func:`next_pair`
    would give, each excluding those before it (and ``exclude``). Fewer when the study runs out.
    """
    rng = rng or np.random.default_rng()
    held = {canonical_pair(int(a), int(b)) for a, b in exclude}
    chosen: list[NextPair] = []
    token = _refill.set(_Refill(user_id=user.pk))
    try:
        for _ in range(k):
            pair = next_pair(study=study, user=user, exclude=held, rng=rng)
            if pair is None:
                break
            chosen.append(pair)
            held.add(canonical_pair(pair.left.pk, pair.right.pk))
    finally:
        _refill.reset(token)
    items = Item.objects.in_bulk({i for p in chosen for i in (p.left.pk, p.right.pk)})
    attach_spaces(list(items.values()))  # records: their hidden columns, read once
    return [
        replace(p, left=items[p.left.pk], right=items[p.right.pk])
        for p in chosen
        if p.left.pk in items and p.right.pk in items
    ]


def _present(pair, reason: str, rng, **scores) -> NextPair | None:
    if _refill.get() is not None:  # next_pairs reads the items of all its pairs at once
        first, second = Item(pk=pair[0]), Item(pk=pair[1])
    else:
        items = Item.objects.in_bulk(list(pair))
        if len(items) < 2:
            return None
        first, second = items[pair[0]], items[pair[1]]
    if rng.random() < 0.5:
        first, second = second, first
    return NextPair(left=first, right=second, reason=reason, **scores)


def _study_first_id(study) -> int:
    """The study's oldest judgment id (cached per process: a stale value only widens a range)."""
    if study.pk not in _first_id_cache:
        first = (
            PairJudgment.objects.filter(study_id__gte=study.pk, study_id__lte=study.pk)
            .order_by("study_id", "id")  # along the (study, id) index on both databases
            .values_list("id", flat=True)
            .first()
        )
        if first is None:
            return 0
        _first_id_cache[study.pk] = first
    return _first_id_cache[study.pk]


def _scan_rows(study, before_id: int | None = None) -> list[tuple]:
    """The study's newest ``SCAN_ROWS`` judgments (at or before ``before_id``), any source."""
    return list(
        newest_first(PairJudgment.objects.all(), study, before_id=before_id).values_list(
            "id", "item_a_id", "item_b_id", "annotator_id", "source"
        )[:SCAN_ROWS]
    )


def _overlap_pair(study, user, excluded, pool, rng) -> tuple[int, int] | None:
    """An open pair among two bounded windows of the study's judgments (never a full scan):
    one of the fullest, at random."""
    if study.overlap < 2:
        return None
    refill = _refill.get()
    if refill is not None:  # read once per refill, then taken in order
        if refill.overlap is None:
            refill.overlap = _overlap_open(study, user, excluded, pool, rng)
        return next((p for p in refill.overlap if p not in excluded), None)
    found = _overlap_open(study, user, excluded, pool, rng)
    return found[0] if found else None


def _overlap_open(study, user, excluded, pool, rng) -> list[tuple[int, int]]:
    """The open pairs of the two windows, fullest first, ties in random order."""
    rows = _scan_rows(study)
    if len(rows) == SCAN_ROWS:  # older history exists: also look at a random earlier stretch
        low, oldest_seen = _study_first_id(study), rows[-1][0]
        if low < oldest_seen:
            rows += _scan_rows(study, before_id=int(rng.integers(low, oldest_seen)) + 1)
    in_window: Counter = Counter()
    seen_mine = set()
    for _, a, b, annotator_id, source in rows:
        if source != Source.ANNOTATED:
            continue
        if annotator_id == user.pk:
            seen_mine.add((a, b))
        else:
            in_window[(a, b)] += 1
    candidates = [
        p
        for p, n in in_window.items()
        if n < study.overlap and p not in seen_mine and p not in excluded
    ]
    if not candidates:
        return []
    if len(candidates) > OVERLAP_CANDIDATES:  # the fullest first, ties at random
        order = np.lexsort((rng.random(len(candidates)), [-in_window[p] for p in candidates]))
        candidates = [candidates[i] for i in order[:OVERLAP_CANDIDATES]]
    counts: Counter = Counter()
    mine = set()
    for a, b, annotator_id in judged_pairs(study=study, pairs=candidates):
        counts[(a, b)] += 1
        if annotator_id == user.pk:
            mine.add((a, b))
    in_pool = pool.contains(np.array(candidates)).all(axis=1)
    open_pairs = [
        p
        for p, ok in zip(candidates, in_pool, strict=True)
        if ok and counts[p] < study.overlap and p not in mine
    ]
    order = np.lexsort((rng.random(len(open_pairs)), [-counts[p] for p in open_pairs]))
    return [open_pairs[i] for i in order]


def _listed_pair(model, study, user, excluded) -> tuple[int, int] | None:
    """A random gold or candidate pair of the study the annotator has not answered (candidate
    pairs of the highest priority first: those an audit asked about)."""
    mine = PairJudgment.objects.filter(
        study=study, annotator=user, item_a=OuterRef("item_a"), item_b=OuterRef("item_b")
    )
    refill = _refill.get()
    # A refill reads enough for all of its choices at once (its later choices exclude more).
    extra = OVERLAP_CANDIDATES if refill is not None else 0
    if refill is not None and model in refill.listed:
        pairs = refill.listed[model]
    else:
        pairs = list(
            model.objects.filter(study=study)
            .exclude(Exists(mine))
            .order_by(*(("-priority", "?") if model is CandidatePair else ("?",)))
            .values_list("item_a_id", "item_b_id")[: len(excluded) + 1 + extra]
        )
        if refill is not None:
            refill.listed[model] = pairs
    for pair in pairs:
        if pair not in excluded:
            return pair
    return None


def _candidate_pairs(study, user, excluded, pool, rng) -> np.ndarray:
    """Up to CANDIDATES random pool pairs (as pool indices, shape (m, 2)) not yet answered."""
    n = len(pool)
    for _ in range(ATTEMPTS):
        i = rng.integers(n, size=CANDIDATES)
        j = rng.integers(n - 1, size=CANDIDATES)
        j = j + (j >= i)  # j != i, uniform over the others
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        idx = np.unique(np.stack([lo, hi], axis=1), axis=0)
        ids = pool.ids[idx]
        # pool.ids is sorted ascending, so lo < hi gives canonical (smaller id first) pairs.
        pairs = [tuple(p) for p in ids.tolist()]
        answered = _answered(study, user, pairs) | excluded
        keep = np.array([p not in answered for p in pairs], dtype=bool)
        if keep.any():
            return idx[keep]
    return np.empty((0, 2), dtype=np.int64)


def _answered(study, user, pairs) -> set[tuple[int, int]]:
    """Which of ``pairs`` the user answered: in a refill, from the user's answered pairs read
    once (up to ``ANSWERED_MAX``), else one query."""
    refill = _refill.get()
    if refill is not None and not refill.answered_loaded:
        refill.answered_loaded = True
        rows = list(
            PairJudgment.objects.filter(study=study, annotator=user).values_list(
                "item_a_id", "item_b_id"
            )[: ANSWERED_MAX + 1]
        )
        refill.answered = set(rows) if len(rows) <= ANSWERED_MAX else None
    if refill is not None and refill.answered is not None:
        return {p for p in pairs if p in refill.answered}
    return answered_pairs(study=study, user=user, pairs=pairs)


def _recent_rows(study, pool) -> np.ndarray:
    """Matrix rows (shape (k, 2)) of the pairs in the study's newest judgments (any annotator,
    any source) whose items are in the pool: what the crowd was asked just now."""
    rows = _scan_rows(study)
    if not rows:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.array([(a, b) for _, a, b, _, _ in rows], dtype=np.int64)
    where = np.searchsorted(pool.ids, pairs).clip(0, len(pool.ids) - 1)
    known = (pool.ids[where] == pairs).all(axis=1)
    return pool.rows[where[known]].reshape(-1, 2)


def _watching(study) -> bool:
    """``annotation.hooks.drift_watch``, read once per refill."""
    refill = _refill.get()
    if refill is not None and refill.watch is None:
        refill.watch = drift_watch(study_id=study.pk)
    return refill.watch if refill is not None else drift_watch(study_id=study.pk)


def _strategy_pair(study, user, excluded, pool, rng) -> NextPair | None:
    idx = _candidate_pairs(study, user, excluded, pool, rng)
    if idx.size == 0:
        return None
    strategy = study.strategy
    metric = None
    if strategy in (
        Study.Strategy.UNCERTAINTY,
        Study.Strategy.INFORMATION,
        Study.Strategy.TARGETED,
    ):
        metric = current_metric(study_id=study.pk, method="explore")
        if metric is None:
            strategy = Study.Strategy.RANDOM
    elif strategy == Study.Strategy.STRATIFIED:
        metric = current_metric(study_id=study.pk)

    if strategy == Study.Strategy.RANDOM:
        pick = int(rng.integers(len(idx)))
        pair = (int(pool.ids[idx[pick, 0]]), int(pool.ids[idx[pick, 1]]))
        return _present(pair, "random", rng)
    share = 1.0 if _watching(study) else None  # the drift flag looks again: control only
    control, own = picks.control_pick(picks.pair_control(*pool.ids[idx].T), rng, share)
    if control is not None:  # control pairs: uniform draws only (strategies.py)
        pair = (int(pool.ids[idx[control, 0]]), int(pool.ids[idx[control, 1]]))
        return _present(pair, "control", rng)
    idx = idx[own]

    rows_a, rows_b = pool.rows[idx[:, 0]], pool.rows[idx[:, 1]]
    recent = _recent_rows(study, pool) if strategy == Study.Strategy.INFORMATION else None
    n_recent = 0 if recent is None else len(recent)
    extra = [] if recent is None else [recent[:, 0], recent[:, 1]]
    unique_rows, inverse = np.unique(np.concatenate([rows_a, rows_b, *extra]), return_inverse=True)
    vectors = study.space.vectors(unique_rows)  # one read of the rows involved
    m = len(idx)
    z = vectors[inverse[:m]] - vectors[inverse[m : 2 * m]]
    squared = np.einsum("ij,ij->i", z, z) if metric is None else metric.squared_distances(z)

    if strategy == Study.Strategy.TARGETED:
        pick, _ = picks.targeted_pick(squared, rng)
        scores = {"p_comparable": float(metric.p_comparable(z[pick : pick + 1])[0])}
    elif strategy == Study.Strategy.INFORMATION:
        recent_z = vectors[inverse[2 * m : 2 * m + n_recent]] - vectors[inverse[2 * m + n_recent :]]
        pick, _ = picks.information_pick(
            z, squared, recent_z, metric.squared_distances(recent_z), metric.factor, rng
        )
        scores = {"p_comparable": float(metric.p_comparable(z[pick : pick + 1])[0])}
    elif strategy == Study.Strategy.UNCERTAINTY:
        probability = metric.p_comparable(z)
        pick = picks.uncertainty_pick(probability, rng)
        scores = {"p_comparable": float(probability[pick])}
    else:
        logd = np.log1p(squared)
        edges = np.linspace(logd.min(), logd.max(), STRATA + 1)
        stratum = np.clip(np.searchsorted(edges, logd, side="right") - 1, 0, STRATA - 1)
        filled = np.unique(stratum)
        chosen = filled[int(rng.integers(len(filled)))]
        members = np.flatnonzero(stratum == chosen)
        pick = int(members[int(rng.integers(len(members)))])
        scores = {}
    pair = (int(pool.ids[idx[pick, 0]]), int(pool.ids[idx[pick, 1]]))
    return _present(
        pair,
        strategy,
        rng,
        distance=float(np.sqrt(squared[pick])),
        metric_version_id=metric.version_id if metric is not None else None,
        **scores,
    )
