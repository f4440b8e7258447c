"""Each annotator's queue of next pairs, refilled in bulk by the sampler.

Choosing a pair reads the overlap windows, the gold and candidate pairs and the annotator's
answered pairs; doing that for every answer was half of an answer's cost. Instead the sampler
chooses ``PAIR_QUEUE_SIZE`` pairs at once (:func:`annotation.labelling.sampling.next_pairs`:
what as many successive ``next_pair`` calls would give, so overlap, gold and strategy shares are
those of the sampler) and the answers take them one by one from the cache:

* ``fm:pq:{study}:{user}`` holds the entries (pair, reason, both items as the API shows them),
  a generation id and the **stamp** of the study's facts they were chosen under
  (``annotation/facts.py``); ``fm:pq:{study}:{user}:{generation}`` counts the entries taken.
  Taking one is an atomic increment (``INCR`` in Redis), so two requests of one annotator never
  get the same entry: no pair is served twice.
* The queue is thrown away and chosen again when the study's facts change (settings, pool, gold
  or candidate pairs: a new stamp), when a strategy that reads the metric (``uncertainty``,
  ``targeted``, ``information``, ``stratified``) has a newer metric version than the one the
  queue was chosen under (its pairs were picked for the old fit: up to ``PAIR_QUEUE_SIZE``
  stale picks per annotator otherwise; one version lookup per take for those strategies), when the annotator skips a pair (:func:`forget`), when an
  answer arrives for a pair still waiting in it (:func:`answered`), and after ``QUEUE_SECONDS``.
* An **overlap** pair depends on other people's answers, which go on arriving while it waits:
  it is checked again when it is taken (one query: still short of ``study.overlap`` answers and
  not answered by this annotator), so a queue never over-fills a pair the sampler would not.

When the cache does not answer, the sampler runs per request as before.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from dataclasses import dataclass, replace

from django.conf import settings
from django.core.cache import cache

from annotation.facts import facts_for
from annotation.hooks import current_metric
from annotation.labelling.sampling import NextPair, next_pair, next_pairs
from annotation.labelling.selectors import judged_pairs
from annotation.models import Study, canonical_pair
from annotation.serializers import item_data

logger = logging.getLogger(__name__)

QUEUE_SECONDS = 600


@dataclass(frozen=True)
class QueuedPair:
    pair: tuple[int, int]  # canonical
    left: dict  # ItemSerializer data, as shown
    right: dict
    reason: str
    # (the queue's creation in ms, the place in it): the order the sampler chose, which answers
    # in flight together may reverse on the way; the page shows the lower first (label.js).
    order: tuple[int, int] = (0, 0)


def _key(study_id: int, user_id: int) -> str:
    return f"fm:pq:{int(study_id)}:{int(user_id)}"


def _pos_key(study_id: int, user_id: int, generation: str) -> str:
    return f"{_key(study_id, user_id)}:{generation}"


def _entry(pair: NextPair) -> QueuedPair:
    return QueuedPair(
        pair=canonical_pair(pair.left.pk, pair.right.pk),
        left=item_data(pair.left),
        right=item_data(pair.right),
        reason=pair.reason,
    )


def _still_open(study: Study, user, entry: QueuedPair) -> bool:
    """An overlap pair taken from the queue: still short of its answers, not answered by us."""
    if entry.reason != "overlap":
        return True
    rows = judged_pairs(study=study, pairs=[entry.pair])
    return len(rows) < study.overlap and all(who != user.pk for _, _, who in rows)


# The strategies whose picks depend on the fitted metric, and the metric method they read.
_METRIC_STRATEGIES = {
    Study.Strategy.UNCERTAINTY: "explore",
    Study.Strategy.TARGETED: "explore",
    Study.Strategy.INFORMATION: "explore",
    Study.Strategy.STRATIFIED: None,
}


def _metric_version(study: Study) -> int | None:
    """The id of the metric version the study's strategy would pick with now (None when the
    strategy reads no metric, or there is none yet)."""
    if study.strategy not in _METRIC_STRATEGIES:
        return None
    metric = current_metric(study_id=study.pk, method=_METRIC_STRATEGIES[study.strategy])
    return metric.version_id if metric is not None else None


def _queued(study: Study, user) -> dict | None:
    """The annotator's current queue, or None when there is none or it is stale: other facts,
    or chosen under an older metric version than the strategy would use now."""
    queued = cache.get(_key(study.pk, user.pk))
    facts = facts_for(study)
    stamp = facts.stamp if facts is not None else ""
    if queued is None or queued["stamp"] != stamp:
        return None
    return queued if queued.get("metric") == _metric_version(study) else None


def served_items(*, study: Study, user, pair) -> dict[int, dict] | None:
    """The two items (by id, as shown) when ``pair`` comes from the annotator's current queue —
    chosen from the study's pool as it is now, so an answer to it needs no item query."""
    pair = canonical_pair(int(pair[0]), int(pair[1]))
    try:
        queued = _queued(study, user)
    except Exception:  # noqa: BLE001 - a down cache: the items are read
        return None
    for entry in queued["entries"] if queued is not None else ():
        if entry.pair == pair:
            return {entry.left["id"]: entry.left, entry.right["id"]: entry.right}
    return None


def pair_take(*, study: Study, user, exclude=()) -> QueuedPair | None:
    """The annotator's next pair (None when the sampler has none); ``exclude``: pairs the
    client holds unsent, or just answered."""
    held = {canonical_pair(int(a), int(b)) for a, b in exclude}
    facts = facts_for(study)
    stamp = facts.stamp if facts is not None else ""
    try:
        queued = _queued(study, user)
        if queued is not None:
            pos_key = _pos_key(study.pk, user.pk, queued["generation"])
            while True:
                taken = cache.incr(pos_key)  # ValueError once the counter has expired
                if taken > len(queued["entries"]):
                    break
                entry = queued["entries"][taken - 1]
                if entry.pair not in held and _still_open(study, user, entry):
                    return replace(entry, order=(queued.get("created", 0), taken))
    except ValueError:
        pass
    except Exception:  # noqa: BLE001 - a down cache: one sampler run, as before the queue
        logger.warning("cache unreachable: the next pair is chosen per request")
        pair = next_pair(study=study, user=user, exclude=list(held))
        return replace(_entry(pair), order=(_now_ms(), 0)) if pair is not None else None
    return _refill(study=study, user=user, held=held, stamp=stamp)


def _refill(*, study: Study, user, held: set, stamp: str) -> QueuedPair | None:
    size = int(settings.PAIR_QUEUE_SIZE)
    metric = _metric_version(study)  # read first: a version arriving during the refill is newer
    entries = [_entry(p) for p in next_pairs(study=study, user=user, k=size, exclude=list(held))]
    if not entries:
        return None
    generation, created = secrets.token_hex(6), _now_ms()
    queued = {"generation": generation, "stamp": stamp, "metric": metric, "entries": entries}
    queued["created"] = created
    with contextlib.suppress(Exception):  # a down cache: this request still gets its pair
        cache.set(_pos_key(study.pk, user.pk, generation), 1, QUEUE_SECONDS)
        cache.set(_key(study.pk, user.pk), queued, QUEUE_SECONDS)
    return replace(entries[0], order=(created, 1))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def forget(*, study_id: int, user_id: int) -> None:
    """Throw the annotator's queue away (it is chosen again on the next request)."""
    try:
        cache.delete(_key(study_id, user_id))
    except Exception:  # noqa: BLE001 - the queue then expires after QUEUE_SECONDS
        logger.warning("cache unreachable: the pair queue of user %s stays", user_id)


def answered(*, study_id: int, user_id: int, pairs) -> None:
    """Answers arrived for ``pairs``: a queue still holding one of them is thrown away."""
    pairs = {canonical_pair(int(a), int(b)) for a, b in pairs}
    try:
        queued = cache.get(_key(study_id, user_id))
        if queued is None:
            return
        taken = cache.get(_pos_key(study_id, user_id, queued["generation"])) or 0
        waiting = {e.pair for e in queued["entries"][taken:]}
    except Exception:  # noqa: BLE001
        return
    if waiting & pairs:
        forget(study_id=study_id, user_id=user_id)
