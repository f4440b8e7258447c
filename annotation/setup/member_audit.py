"""Membership changes are audited wherever they happen (pages, admin, inline, commands, shell),
in the transaction of the change."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from annotation.models import Membership
from audit.services import Action, audit_record


@receiver(pre_save, sender=Membership)
def _remember_role(sender, instance: Membership, **kwargs) -> None:
    if instance.pk is not None:
        instance._audit_old = (
            Membership.objects.filter(pk=instance.pk)
            .values("role", "user_id", "study_id", "target", "attributes")
            .first()
        )


def _detail(instance: Membership) -> dict:
    return {"user_id": instance.user_id, "role": instance.role}


@receiver(post_save, sender=Membership)
def _membership_saved(sender, instance: Membership, created: bool, raw: bool = False, **kwargs):
    if raw:  # fixtures
        return
    if created:
        audit_record(
            action=Action.MEMBERSHIP_CREATE,
            target=instance,
            study_id=instance.study_id,
            detail=_detail(instance),
        )
        return
    old = getattr(instance, "_audit_old", None) or {}
    changes = {
        field: [old.get(key), getattr(instance, key)]
        for field, key in (
            ("role", "role"),
            ("user_id", "user_id"),
            ("study_id", "study_id"),
            ("target", "target"),
            ("attributes", "attributes"),
        )
        if old.get(key) != getattr(instance, key)
    }
    if changes:
        audit_record(
            action=Action.MEMBERSHIP_CHANGE,
            target=instance,
            study_id=instance.study_id,
            detail=_detail(instance) | {"changes": changes},
        )


@receiver(post_delete, sender=Membership)
def _membership_deleted(sender, instance: Membership, **kwargs) -> None:
    audit_record(
        action=Action.MEMBERSHIP_DELETE,
        target=instance,
        study_id=instance.study_id,
        detail=_detail(instance),
    )
