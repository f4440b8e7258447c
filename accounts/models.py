"""Accounts: the personal API tokens (users are Django's own)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A named, revocable API token for downloading metrics (a user may hold several).

    Only the token's sha256 is stored; the plaintext is shown once, when it is created. A token
    may be limited to some studies (``study_ids``; empty: every study of its user) and may
    expire (``expires_at``; empty: never). Study ids, not a relation: accounts sits below the
    app that holds studies (``annotation``), and a deleted study's id simply matches nothing.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="First characters, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    study_ids = models.JSONField(
        default=list, blank=True, help_text="Ids of the studies it may reach; empty: all."
    )
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")

    class Meta:
        db_table = "learning_apitoken"  # the table it had in learning (accounts.0001)
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def expired(self, now) -> bool:
        return self.expires_at is not None and self.expires_at <= now
