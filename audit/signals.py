"""DRF-token changes are audited wherever they happen (admin, commands, shell), in the
transaction of the change. (Membership changes: ``annotation.setup.member_audit``.)"""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from rest_framework.authtoken.models import Token

from .services import Action, audit_record

# DRF's plain tokens (created in the admin or by `manage.py drf_create_token`). The key is the
# token itself and its primary key: it is never logged; the target id is the owner's id.


@receiver(post_save, sender=Token)
def _drf_token_saved(sender, instance: Token, created: bool, raw: bool = False, **kwargs):
    if created and not raw:
        audit_record(
            action=Action.TOKEN_CREATE,
            target=instance,
            target_id=str(instance.user_id),
            detail={"kind": "drf", "owner_id": instance.user_id},
        )


@receiver(post_delete, sender=Token)
def _drf_token_deleted(sender, instance: Token, **kwargs) -> None:
    audit_record(
        action=Action.TOKEN_REVOKE,
        target=instance,
        target_id=str(instance.user_id),
        detail={"kind": "drf", "owner_id": instance.user_id},
    )
