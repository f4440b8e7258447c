"""A study's settings: create and change (``study_save``), duplicate, archive and restore."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.access import Action, require, require_space_use
from annotation.models import (
    MAX_OVERLAP,
    MAX_TARGET,
    CandidatePair,
    GoldPair,
    Membership,
    PairJudgment,
    Study,
)
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.access import is_staff, require_staff
from common.errors import Conflict, InvalidInput, duplicate_as_conflict, locked_or_gone
from spaces.models import EmbeddingSpace

# What a new study starts with where its creator says nothing (the page and the set-up API): every
# item of its space, a modest target, open.
NEW_STUDY_DEFAULTS = {
    "pool": Study.Pool.ALL,
    "mode": Study.Mode.BOTH,
    "strategy": Study.Strategy.RANDOM,
    "overlap": 2,
    "gold_rate": 0.0,
    "candidate_rate": 1.0,
    "target_per_annotator": 100,
    "stop_at_target": False,
    "is_active": True,
    "instructions": "",
}

# The settings a study form edits (and a duplicate copies).
STUDY_FIELDS = [
    "name",
    "instructions",
    "mode",
    "space",
    "pool",
    "strategy",
    "overlap",
    "gold_rate",
    "candidate_rate",
    "target_per_annotator",
    "stop_at_target",
    "is_active",
]


LATER = {"candidate_rate"}  # settings that callers written before them need not send


def _check_settings(data: dict) -> None:
    if not str(data.get("name") or "").strip():
        raise InvalidInput("A study needs a name.")
    if not 0 <= float(data.get("gold_rate", 0)) <= 1:
        raise InvalidInput("The gold rate is between 0 and 1.")
    if not 0 <= float(data.get("candidate_rate", 1)) <= 1:
        raise InvalidInput("The share of candidate pairs is between 0 and 1.")
    if not 1 <= int(data.get("overlap", 1)) <= MAX_OVERLAP:
        raise InvalidInput(f"Overlap k is between 1 and {MAX_OVERLAP:,}.")
    if not 1 <= int(data.get("target_per_annotator", 1)) <= MAX_TARGET:
        raise InvalidInput(f"The target is between 1 and {MAX_TARGET:,} answers.")
    if data.get("pool") == Study.Pool.TAGS and not data.get("tags"):
        raise InvalidInput("Choose at least one tag for a pool of items with given tags.")


def _has_data(study: Study) -> bool:
    return (
        PairJudgment.objects.filter(study=study).exists()
        or study.groups.exists()
        or GoldPair.objects.filter(study=study).exists()
        or CandidatePair.objects.filter(study=study).exists()
        or study.pool_keys.exists()
    )


def _snapshot(study: Study) -> dict:
    values = {f: getattr(study, f) for f in STUDY_FIELDS if f != "space"}
    values["space"] = study.space_id
    values["tags"] = sorted(study.pool_tags.values_list("name", flat=True)) if study.pk else []
    return values


@transaction.atomic
def study_save(*, user, data: dict, study: Study | None = None) -> Study:
    """Create (staff; the creator becomes its admin member) or change (the study's admins) a
    study from a form's cleaned data: ``STUDY_FIELDS`` plus ``tags`` (Tag objects, for the
    ``tags`` pool). The space of a study that already has answers, groups, gold or candidate
    pairs or a key list cannot change; a new space must be one the user may use
    (``annotation.access.require_space_use``)."""
    _check_settings(data)
    tags = list(data.get("tags") or [])
    if study is None:
        require_staff(user, "Only staff create studies.")
        before = None
        study = Study()
    else:
        require(user, study, Action.MANAGE, "Only an admin of the study can change it.")
        study = Study.objects.select_for_update().get(pk=study.pk)
        before = _snapshot(study)
    if data["space"].pk != study.space_id:  # a space deleted meanwhile: 409, not a 500
        data["space"] = locked_or_gone(
            EmbeddingSpace.objects.filter(pk=data["space"].pk),
            f"The embedding space {data['space'].name!r} was deleted meanwhile.",
            error=Conflict,
        )
    require_space_use(user, data["space"], study=study)
    if before is not None and data["space"].pk != study.space_id and _has_data(study):
        raise InvalidInput(
            "The embedding space cannot change: the study already has items, pairs or answers "
            "on its space. Duplicate the study instead."
        )
    for field in STUDY_FIELDS:  # (a setting added later may be left out: it stays as it is)
        if field in data or field not in LATER:
            setattr(study, field, data[field])
    if study.archived_at is not None and study.is_active:
        raise InvalidInput("An archived study stays closed; restore it first.")
    taken = f"A study named {study.name!r} already exists."
    if Study.objects.filter(name=study.name).exclude(pk=study.pk).exists():
        raise Conflict(taken)
    with duplicate_as_conflict(taken):
        study.save()
    study.pool_tags.set(tags if study.pool == Study.Pool.TAGS else [])
    after = _snapshot(study)
    if before is None:
        audit_record(
            action=AuditAction.STUDY_CREATE,
            actor=user,
            target=study,
            study_id=study.pk,
            detail={"settings": _jsonable(after)},
        )
        # The creator is the study's first admin: it is listed among its members and stays
        # its admin should they lose staff rights.
        Membership.objects.create(study=study, user=user, role=Membership.Role.ADMIN)
    else:
        changes = {
            k: [_jsonable(before[k]), _jsonable(after[k])] for k in after if before[k] != after[k]
        }
        if changes:
            if "pool" in changes or "tags" in changes or "space" in changes:
                Study.objects.filter(pk=study.pk).update(pool_revision=F("pool_revision") + 1)
            audit_record(
                action=AuditAction.STUDY_CHANGE,
                actor=user,
                target=study,
                study_id=study.pk,
                detail={"changes": changes},
            )
    study.refresh_from_db()
    return study


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


@transaction.atomic
def study_duplicate(*, user, study: Study, name: str) -> Study:
    """A new, open study with the same settings, pool, gold and candidate pairs; no answers,
    groups or members (the duplicating admin becomes its admin)."""
    require(user, study, Action.MANAGE, "Only an admin of the study can duplicate it.")
    name = (name or "").strip()
    if not name:
        raise InvalidInput("The copy needs a name.")
    if len(name) > 200:
        raise InvalidInput("A study name has at most 200 characters.")
    taken = f"A study named {name!r} already exists."
    if Study.objects.filter(name=name).exists():
        raise Conflict(taken)
    with duplicate_as_conflict(taken):  # two copies under one name at once
        copy = Study.objects.create(
            **{f: getattr(study, f) for f in STUDY_FIELDS if f not in ("name", "is_active")},
            name=name,
            is_active=True,
        )
    copy.pool_tags.set(study.pool_tags.all())
    copy.pool_keys.set(study.pool_keys.all())
    GoldPair.objects.bulk_create(
        GoldPair(study=copy, item_a_id=a, item_b_id=b, label=label)
        for a, b, label in study.gold_pairs.values_list("item_a_id", "item_b_id", "label")
    )
    CandidatePair.objects.bulk_create(
        CandidatePair(study=copy, item_a_id=a, item_b_id=b)
        for a, b in study.candidate_pairs.values_list("item_a_id", "item_b_id")
    )
    if not is_staff(user):
        Membership.objects.create(study=copy, user=user, role=Membership.Role.ADMIN)
    audit_record(
        action=AuditAction.STUDY_CREATE,
        actor=user,
        target=copy,
        study_id=copy.pk,
        detail={"duplicate_of": study.pk},
    )
    return copy


@transaction.atomic
def study_archive(*, user, study: Study, archive: bool) -> Study:
    """Archive (closed, off the study lists; data kept) or restore (listed again, still closed)."""
    require(user, study, Action.MANAGE, "Only an admin of the study can archive it.")
    study = Study.objects.select_for_update().get(pk=study.pk)
    if archive == (study.archived_at is not None):
        return study
    study.archived_at = timezone.now() if archive else None
    if archive:
        study.is_active = False
    study.save(update_fields=["archived_at", "is_active"])
    audit_record(
        action=AuditAction.STUDY_ARCHIVE,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"archived": archive},
    )
    return study
