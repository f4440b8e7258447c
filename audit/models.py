"""One row per administrative action; written in the same transaction as the action."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    class Action(models.TextChoices):
        PUBLISH = "publish", "metric version published"
        MEMBERSHIP_CREATE = "membership.create", "membership created"
        MEMBERSHIP_CHANGE = "membership.change", "membership changed"
        MEMBERSHIP_DELETE = "membership.delete", "membership deleted"
        EXPORT_SIGMA = "export.sigma", "Sigma downloaded"
        EXPORT_JUDGMENTS = "export.judgments", "judgments exported"
        EXPORT_GROUPS = "export.groups", "groups exported"
        TOKEN_CREATE = "token.create", "API token created"
        TOKEN_REVOKE = "token.revoke", "API token revoked"
        STUDY_CREATE = "study.create", "study created"
        STUDY_CHANGE = "study.change", "study settings changed"
        STUDY_ARCHIVE = "study.archive", "study archived or restored"
        STUDY_POOL = "study.pool", "study item pool uploaded"
        STUDY_PAIRS = "study.pairs", "candidate pairs uploaded"
        STUDY_GOLD = "study.gold", "gold pairs uploaded"
        MEMBERSHIP_INVITE = "membership.invite", "person invited"
        SPACE_SHARING = "space.sharing", "space owner or sharing changed"
        SPACE_DELETE = "space.delete", "space deleted"
        MODEL_AUDIT = "model.audit", "model audited"
        AUDIT_ASK = "audit.ask", "audit violations sent to annotators"
        ADJUDICATION_SET = "adjudication.set", "pair adjudicated"
        ADJUDICATION_REMOVE = "adjudication.remove", "adjudication taken back"
        WEAT_TEST_SAVE = "weat.save", "WEAT test defined or changed"
        WEAT_TEST_DELETE = "weat.delete", "WEAT test deleted"
        WEBHOOK_CHANGE = "webhook.change", "webhook created, paused, resumed or removed"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty for automatic actions (auto-publish, commands).",
    )
    actor_name = models.CharField(
        max_length=150, blank=True, help_text="The actor's username, kept if the user is deleted."
    )
    action = models.CharField(max_length=30, choices=Action.choices, db_index=True)
    target_type = models.CharField(max_length=60)
    target_id = models.CharField(max_length=64, blank=True)
    # No database constraint: events outlive their study (a study deletion audits the
    # deletion of its memberships in the same transaction).
    study = models.ForeignKey(
        "annotation.Study",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
    )
    detail = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["study", "id"], name="audit_study_id")]

    def __str__(self) -> str:
        who = self.actor_name or "system"
        return f"{self.created_at:%Y-%m-%d %H:%M} {who} {self.action} {self.target_type}#{self.target_id}"


class RateLimit(models.Model):
    """One counter of a rate limit (``audit.limits``), changed only by single atomic statements
    so that concurrent requests in any number of processes cannot both pass one check."""

    key = models.CharField(max_length=80, primary_key=True)
    count = models.IntegerField(default=0, help_text="Attempts in the window / 1 if granted.")
    stamp = models.FloatField(default=0.0, help_text="Epoch seconds (a token bucket's TAT).")
    expires = models.FloatField(db_index=True, help_text="Epoch seconds after which it is void.")

    class Meta:
        verbose_name = "rate-limit counter"

    def __str__(self) -> str:
        return self.key
