"""The answer path's rarely changing facts, cached in Django's cache (Redis in production):
one place for each key and its invalidation.

| key | holds | forgotten when |
|---|---|---|
| ``fm:facts:study:{id}`` | the ``Study`` row (with its space and pool tags), its gold pairs, and a random **stamp** | the study, its space, pool tags or keys, its items' tags, gold or candidate pairs change (signals below; the bulk writes of ``annotation/setup/pairs.py`` call :func:`study_changed`) |
| ``fm:facts:role:{study}:{user}`` | the user's role in the study (``""`` for none) | the membership is saved or deleted |
| ``fm:facts:hooks:{study}`` | the events some active webhook of the study asked for | a webhook is saved, deleted, paused or resumed (signals; :func:`webhooks_changed`) |

Every cached value is read-only: code that writes a study loads it from the database.
Invalidation deletes the key at once and again after the commit (a reader between the two
could otherwise cache the old row). The per-annotator pair queues
(``annotation/labelling/pair_queue.py``) remember the stamp they were built under; a new stamp
(any change above) makes them refill.

A cache that is down costs queries, never an answer: every read falls back to the database.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction
from django.db.models import prefetch_related_objects
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from spaces.models import EmbeddingSpace, Item

from .models import CandidatePair, GoldPair, Membership, Study, Webhook

logger = logging.getLogger(__name__)

FACTS_SECONDS = 600  # an upper bound on staleness if an invalidation were ever missed
_NO_ROLE = ""


@dataclass(frozen=True)
class StudyFacts:
    study: Study  # read-only: select_related("space"), pool tags prefetched
    gold: frozenset[tuple[int, int]]  # canonical gold pairs
    stamp: str  # changes whenever anything above changes


def _study_key(study_id: int) -> str:
    return f"fm:facts:study:{int(study_id)}"


def _role_key(study_id: int, user_id: int) -> str:
    return f"fm:facts:role:{int(study_id)}:{int(user_id)}"


def _get(key: str):
    try:
        return cache.get(key)
    except Exception:  # noqa: BLE001 - a down cache costs a query, never an answer
        return None


def _set(key: str, value) -> None:
    with contextlib.suppress(Exception):
        cache.set(key, value, FACTS_SECONDS)


def _delete(*keys: str) -> None:
    try:
        cache.delete_many(list(keys))
    except Exception:  # noqa: BLE001 - the entries then expire after FACTS_SECONDS
        logger.warning("cache unreachable: %s may stay stale for %s s", keys, FACTS_SECONDS)


def study_facts(study_id: int) -> StudyFacts | None:
    """The study's facts (None when there is no such study)."""
    key = _study_key(study_id)
    found = _get(key)
    if isinstance(found, StudyFacts):
        found.study.__dict__["_facts"] = found  # facts_for(study) needs no second read
        return found
    study = Study.objects.select_related("space").filter(pk=study_id).first()
    if study is None:
        return None
    prefetch_related_objects([study], "pool_tags")
    gold = frozenset(
        GoldPair.objects.filter(study_id=study.pk).values_list("item_a_id", "item_b_id")
    )
    facts = StudyFacts(study=study, gold=gold, stamp=secrets.token_hex(8))
    _set(key, facts)
    study.__dict__["_facts"] = facts
    return facts


def facts_for(study: Study) -> StudyFacts | None:
    """The facts of ``study``: those it came with when it is the cached copy (the answer path
    reads them once per request), else read now."""
    found = study.__dict__.get("_facts")
    return found if found is not None else study_facts(study.pk)


def member_role(study_id: int, user_id: int) -> str | None:
    """The user's ``Membership.Role`` in the study, or None."""
    key = _role_key(study_id, user_id)
    found = _get(key)
    if found is None:
        found = (
            Membership.objects.filter(user_id=user_id, study_id=study_id)
            .values_list("role", flat=True)
            .first()
        ) or _NO_ROLE
        _set(key, found)
    return found or None


def _hooks_key(study_id: int) -> str:
    return f"fm:facts:hooks:{int(study_id)}"


def study_webhook_events(study_id: int) -> frozenset[str]:
    """The events some active webhook of the study asked for (empty for most studies: the
    answer path then spends nothing on webhooks)."""
    key = _hooks_key(study_id)
    found = _get(key)
    if found is None:
        rows = Webhook.objects.filter(study_id=study_id, active=True).values_list("events")
        found = frozenset(str(event) for (events,) in rows for event in events or [])
        _set(key, found)
    return found


def webhooks_changed(study_id: int) -> None:
    key = _hooks_key(study_id)
    _delete(key)
    transaction.on_commit(lambda: _delete(key))


def study_changed(study_id: int) -> None:
    """Forget the study's facts (and so every pair queue built under them)."""
    key = _study_key(study_id)
    _delete(key)
    transaction.on_commit(lambda: _delete(key))


def role_changed(study_id: int, user_id: int) -> None:
    key = _role_key(study_id, user_id)
    _delete(key)
    transaction.on_commit(lambda: _delete(key))


# --- invalidation on change -------------------------------------------------------------------


@receiver([post_save, post_delete], sender=Study)
def _study_saved(sender, instance: Study, raw: bool = False, **kwargs) -> None:
    study_changed(instance.pk)


@receiver([post_save, post_delete], sender=Webhook)
def _webhook_saved(sender, instance: Webhook, raw: bool = False, **kwargs) -> None:
    webhooks_changed(instance.study_id)


@receiver([post_save, post_delete], sender=GoldPair)
@receiver([post_save, post_delete], sender=CandidatePair)
def _pair_saved(sender, instance, raw: bool = False, **kwargs) -> None:
    study_changed(instance.study_id)


@receiver(m2m_changed, sender=Study.pool_tags.through)
@receiver(m2m_changed, sender=Study.pool_keys.through)
def _pool_changed(sender, instance, action: str, reverse: bool, pk_set=None, **kwargs) -> None:
    if not action.startswith("post_"):
        return
    if not reverse:
        study_changed(instance.pk)
    else:  # a tag's or an item's side: every study it touches (or all, on clear)
        ids = pk_set if pk_set is not None else None
        studies = Study.objects.all() if ids is None else Study.objects.filter(pk__in=ids)
        for study_id in studies.values_list("pk", flat=True):
            study_changed(study_id)


@receiver(m2m_changed, sender=Item.tags.through)
def _item_tags_changed(sender, instance, action: str, reverse: bool, pk_set=None, **kwargs):
    """Tagging items changes the pool of every study drawn by those tags."""
    if not action.startswith("post_"):
        return
    if reverse:  # instance is a tag
        tag_ids = [instance.pk]
    elif pk_set is not None:
        tag_ids = list(pk_set)
    else:  # an item's tags cleared: its space's studies
        tag_ids = None
    studies = Study.objects.filter(pool=Study.Pool.TAGS)
    studies = (
        studies.filter(space_id=instance.space_id)
        if tag_ids is None
        else studies.filter(pool_tags__in=tag_ids)
    )
    for study_id in set(studies.values_list("pk", flat=True)):
        study_changed(study_id)


@receiver([post_save, post_delete], sender=EmbeddingSpace)
def _space_saved(sender, instance: EmbeddingSpace, raw: bool = False, **kwargs) -> None:
    for study_id in Study.objects.filter(space_id=instance.pk).values_list("pk", flat=True):
        study_changed(study_id)


@receiver([post_save, post_delete], sender=Membership)
def _membership_saved(sender, instance: Membership, raw: bool = False, **kwargs) -> None:
    role_changed(instance.study_id, instance.user_id)
    old = getattr(instance, "_audit_old", None) or {}  # a membership moved to another user
    if old.get("user_id") not in (None, instance.user_id) or old.get("study_id") not in (
        None,
        instance.study_id,
    ):
        role_changed(old["study_id"], old["user_id"])
