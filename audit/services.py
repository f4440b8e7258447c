"""Writing audit events: ``audit_record`` is called inside the transaction of the action."""

from __future__ import annotations

from django.db import transaction

from .context import client_ip, current
from .models import AuditEvent

Action = AuditEvent.Action
FROM_REQUEST = object()  # the actor of the request being served (None outside requests)


def _user(value):
    return value if value is not None and getattr(value, "is_authenticated", False) else None


@transaction.atomic
def audit_record(
    *,
    action: str,
    target,
    actor=FROM_REQUEST,
    study_id: int | None = None,
    detail: dict | None = None,
    request=None,
    target_id: str | None = None,
) -> AuditEvent:
    """One event. ``actor`` and the IP default to the request being served (DRF requests carry
    the token's user, so pass ``request`` from API views); ``actor=None`` is the system."""
    info = current()
    ip = client_ip(request) if request is not None else (info.ip if info else None)
    if actor is FROM_REQUEST:
        source = request if request is not None else info
        actor = source.user if source is not None else None
    actor = _user(actor)
    return AuditEvent.objects.create(
        action=action,
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        target_type=target._meta.label_lower,
        target_id=str(target.pk) if target_id is None else target_id,
        study_id=study_id,
        detail=detail or {},
        ip=ip,
    )
