"""A feedback import of the study's import page: the file previewed, then stored by the worker.

The preview keeps the file under ``feedback-previews/<token>.upload`` in media storage and makes this
row (``preview``). Confirming claims the row with one conditional UPDATE (``preview`` →
``pending``): five simultaneous confirmations of one preview import it once. The worker claims
``pending`` → ``running`` (or a ``running`` row whose lease ran out: a dead worker), stores the
file in one transaction with the row's ``done``, and removes the file; the sweep re-sends a
pending import no worker took and expires old previews (``annotation/setup/imports/jobs.py``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .studies import Study


class FeedbackImport(models.Model):
    class Status(models.TextChoices):
        PREVIEW = "preview", "previewed"
        PENDING = "pending", "queued"
        RUNNING = "running", "importing"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="feedback_imports")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    token = models.CharField(max_length=32, unique=True, help_text="The preview's file name.")
    name = models.CharField(max_length=255, help_text="The uploaded file's name.")
    kind = models.CharField(max_length=10)  # pairs | groups | auto
    fmt = models.CharField(max_length=10)  # csv | jsonl | auto
    provenance = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PREVIEW)
    error = models.TextField(blank=True)
    judgments = models.PositiveIntegerField(default=0)
    groups = models.PositiveIntegerField(default=0)
    members = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True, help_text="Confirmed or re-sent.")
    started_at = models.DateTimeField(null=True, blank=True, help_text="The worker's lease.")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "queued_at"], name="feedback_import_status")]

    def __str__(self) -> str:
        return f"import of {self.name} into {self.study_id} ({self.status})"
