"""Publishing a version: the swap of a study's published version of a method, in one place.

:func:`version_publish` is the swap without an access check (auto-publishing after an
evaluation calls it directly); :func:`metric_version_publish` checks the user first. A version
whose verdict (``learning.versions.validity.validity_of``) is not ``informative`` is published
only with a reason, recorded as its ``publish_override`` and in the audit log; the study's
webhooks hear of every publish (``annotation.events``).
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.access import Action, require
from annotation.events import study_event
from annotation.models import Study, WebhookEvent
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import Conflict, InvalidInput
from common.text import text_problem
from learning.models import MetricVersion
from learning.versions.validity import (
    INFORMATIVE,
    REASON_MAX_CHARS,
    NotInformative,
    validity_of,
    verdict_line,
)

Status = MetricVersion.Status


def publish_reason_clean(reason) -> str:
    """A publish reason as stored: text, stripped, at most ``REASON_MAX_CHARS`` characters and
    storable (``common.text``); :class:`~common.errors.InvalidInput` otherwise."""
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise InvalidInput("The reason must be text.")
    reason = reason.strip()
    problem = text_problem(reason)
    if problem:
        raise InvalidInput(f"The reason {problem}.")
    if len(reason) > REASON_MAX_CHARS:
        raise InvalidInput(f"The reason is longer than {REASON_MAX_CHARS} characters.")
    return reason


def _refusal(version: MetricVersion, validity: dict) -> NotInformative:
    return NotInformative(
        f"Version #{version.pk}'s verdict: {verdict_line(validity)}. Publishing it needs a reason from "
        "an admin of the study, recorded with the version and in the audit log.",
        validity,
    )


@transaction.atomic
def version_publish(*, version_id: int, user=None, reason: str = "", by: str = "") -> MetricVersion:
    """Make a ready version the published one of its study and method (the previous one is
    unpublished in the same transaction); ``user=None`` is automatic publishing (``by`` names
    the command, if any). No access check: :func:`metric_version_publish` is the checked entry
    point.

    A version whose verdict (:func:`learning.versions.validity.validity_of`) is not
    ``informative`` is published only with a ``reason``, recorded as its ``publish_override``
    (reason, by, at) and in the audit event; without one, :class:`NotInformative` (409) — so
    auto-publishing never publishes it. Publishing again what is published already changes
    nothing, unless it is not informative and has no recorded override (published before the
    rule): then it is refused likewise until a reason is given."""
    reason = publish_reason_clean(reason)
    version = MetricVersion.objects.select_related("study").get(pk=version_id)
    Study.objects.select_for_update().filter(pk=version.study_id).first()  # serialise per study
    version.refresh_from_db()
    if version.status != Status.READY:
        raise Conflict(
            f"Version #{version.pk} is {version.status}; only a ready version can be published."
        )
    validity = validity_of(version)
    informative = validity["verdict"] == INFORMATIVE
    standing = version.is_published and validity["override"] is not None
    if not informative and not reason and not standing:
        raise _refusal(version, validity)
    override = None
    if not informative and reason:
        who = user.get_username() if user is not None else (by or None)
        override = {"reason": reason, "by": who, "at": timezone.now().isoformat()}
    if version.is_published and override is None:
        return version
    replaced = []
    if not version.is_published:
        previous = MetricVersion.objects.filter(
            study_id=version.study_id, method=version.method, is_published=True
        )
        replaced = list(previous.values_list("pk", flat=True))
        previous.update(is_published=False)
        version.is_published = True
        version.published_at = timezone.now()
        version.published_by = user
    if informative or override is not None:
        version.publish_override = override
    version.save(update_fields=["is_published", "published_at", "published_by", "publish_override"])
    audit_record(
        action=AuditAction.PUBLISH,
        target=version,
        actor=user,
        study_id=version.study_id,
        detail={
            "method": version.method,
            "replaced": replaced,
            "automatic": user is None,
            "verdict": validity["verdict"],
            "override": override,
        },
    )
    study_event(
        study_id=version.study_id,
        event=WebhookEvent.VERSION_PUBLISHED,
        data={
            "version": version.pk,
            "method": version.method,
            "label": version.label,
            "sigma_sha256": version.sigma_sha256,
            "automatic": user is None,
            "replaced": replaced,
            "verdict": validity["verdict"],
            "override_reason": override["reason"] if override else None,
        },
    )
    return version


def metric_version_publish(*, version: MetricVersion, user, reason: str = "") -> MetricVersion:
    """Publish a ready version, if ``user`` may manage its study (``annotation.access``); a
    version that is not informative needs ``reason`` (:func:`version_publish`)."""
    require(user, version.study_id, Action.MANAGE, "Only an admin of the study can publish.")
    return version_publish(version_id=version.pk, user=user, reason=reason)
