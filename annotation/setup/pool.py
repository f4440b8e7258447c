"""A study's item pool by uploaded item keys (``pool_upload``), and the key lookup the pair
uploads share: every unknown key listed, nothing changed."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from annotation.access import Action, require
from annotation.models import CandidatePair, GoldPair, Study
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput
from common.iterables import batched
from spaces.models import Item

SHOWN_UNKNOWN = 20


def unknown_keys(keys: list[str], what: str) -> InvalidInput:
    """The refusal that lists unknown ``keys`` (the first ``SHOWN_UNKNOWN``) and says where."""
    shown = ", ".join(repr(k) for k in keys[:SHOWN_UNKNOWN])
    more = f" and {len(keys) - SHOWN_UNKNOWN} more" if len(keys) > SHOWN_UNKNOWN else ""
    return InvalidInput(f"{len(keys)} unknown key(s) {what}: {shown}{more}. Nothing was changed.")


def items_by_key(queryset, keys) -> dict[str, Item]:
    """The items of ``queryset`` with the given keys, by key (500 keys per query)."""
    found: dict[str, Item] = {}
    for chunk in batched(list(dict.fromkeys(keys)), 500):
        found.update({item.key: item for item in queryset.filter(key__in=chunk)})
    return found


@transaction.atomic
def pool_upload(*, user, study: Study, keys: list[str], replace: bool = False) -> dict:
    """Define (``replace``) or extend the study's item pool by item keys of its space.

    Unknown keys are all listed and nothing changes. The study's pool becomes ``keys``. A
    replacement may not drop items of gold or candidate pairs."""
    require(user, study, Action.MANAGE, "Only an admin of the study can change its items.")
    study = Study.objects.select_for_update().select_related("space").get(pk=study.pk)
    found = items_by_key(Item.objects.filter(space_id=study.space_id), keys)
    unknown = [k for k in keys if k not in found]
    if unknown:
        raise unknown_keys(unknown, f"(not in the space {study.space.name!r})")
    ids = {item.pk for item in found.values()}
    through = Study.pool_keys.through
    already = set()
    if study.pool == Study.Pool.KEYS and not replace:
        already = set(through.objects.filter(study_id=study.pk).values_list("item_id", flat=True))
    if replace or study.pool != Study.Pool.KEYS:
        needed = _paired_items(study)
        dropped = needed - ids
        if dropped:
            keys_dropped = sorted(Item.objects.filter(pk__in=dropped).values_list("key", flat=True))
            raise InvalidInput(
                f"{len(keys_dropped)} item(s) of gold or candidate pairs would leave the pool: "
                f"{', '.join(keys_dropped[:SHOWN_UNKNOWN])}. Nothing was changed."
            )
        through.objects.filter(study_id=study.pk).delete()
    new = ids - already
    through.objects.bulk_create(
        [through(study_id=study.pk, item_id=i) for i in sorted(new)], batch_size=1000
    )
    study.pool = Study.Pool.KEYS
    study.pool_revision = F("pool_revision") + 1
    study.save(update_fields=["pool", "pool_revision"])
    study.pool_tags.clear()
    size = through.objects.filter(study_id=study.pk).count()
    audit_record(
        action=AuditAction.STUDY_POOL,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"keys": len(keys), "added": len(new), "replace": replace, "pool": size},
    )
    return {"keys": len(keys), "added": len(new), "pool": size}


def _paired_items(study: Study) -> set[int]:
    ids: set[int] = set()
    for model in (GoldPair, CandidatePair):
        for a, b in model.objects.filter(study=study).values_list("item_a_id", "item_b_id"):
            ids.update((a, b))
    return ids
