"""Comparable groups, their history, and the study's group revision."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F

from .judgments import Source
from .studies import Study

# Bounds of what one request may carry (the API's serializers and the services both check them).
MAX_GROUP_NAME = 200
MAX_GROUP_SIZE = 5000


class ComparableGroup(models.Model):
    """A named group of items an annotator (or an import) declares comparable."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="comparable_groups",
    )
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ANNOTATED)
    provenance = models.CharField(max_length=300, blank=True)
    members = models.ManyToManyField("spaces.Item", related_name="comparable_groups", blank=True)
    revision = models.PositiveIntegerField(
        default=1, help_text="The study-wide group revision of this group's last edit."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="group_unique_name_in_study"),
        ]

    def __str__(self) -> str:
        return self.name


class GroupEdit(models.Model):
    """History of a group: one row per create / rename / add / remove."""

    class Action(models.TextChoices):
        CREATE = "create", "create"
        RENAME = "rename", "rename"
        ADD = "add", "add"
        REMOVE = "remove", "remove"
        DELETE = "delete", "delete"

    group = models.ForeignKey(ComparableGroup, on_delete=models.CASCADE, related_name="edits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    item = models.ForeignKey(
        "spaces.Item", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    detail = models.CharField(max_length=300, blank=True)
    revision = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.action} r{self.revision}"


class StudyCounter(models.Model):
    """Monotonic per-study revision of the group data (the watermark refits compare)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="counter")
    group_revision = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.study_id}: groups r{self.group_revision}"

    @classmethod
    def group_revision_next(cls, study) -> int:
        """Increment the study's group revision atomically and return the new value.

        The conditional UPDATE takes the counter's row lock until commit, so concurrent edits get
        distinct, increasing revisions on PostgreSQL; SQLite serialises writers anyway.
        """
        cls.objects.get_or_create(study=study)
        cls.objects.filter(study=study).update(group_revision=F("group_revision") + 1)
        return cls.objects.values_list("group_revision", flat=True).get(study=study)
