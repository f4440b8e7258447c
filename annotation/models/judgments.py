"""Answers about pairs: judgments (with their labels), skips and comments."""

from __future__ import annotations

import enum
import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from .studies import Study

# Bounds of what one request may carry (the API's serializers and the services both check them).
MAX_ELAPSED_MS = 24 * 3600 * 1000


class Source(models.TextChoices):
    ANNOTATED = "annotated", "annotated by a person"
    IMPORTED = "imported", "imported"


class Label(models.TextChoices):
    COMPARABLE = "comparable", "comparable"
    INCOMPARABLE = "incomparable", "incomparable"
    UNSURE = "unsure", "unsure"


class LabelCode(enum.IntEnum):
    """A label as a number in arrays: EXPLORE's y (1 comparable, 0 incomparable), 2 unsure."""

    INCOMPARABLE = 0
    COMPARABLE = 1
    UNSURE = 2

    @classmethod
    def of(cls, label: str) -> LabelCode:
        return cls[Label(label).name]


def canonical_pair(item_a_id: int, item_b_id: int) -> tuple[int, int]:
    """A pair as stored: the smaller item id first (``PairJudgment``'s check constraint)."""
    return (item_a_id, item_b_id) if item_a_id < item_b_id else (item_b_id, item_a_id)


class PairJudgment(models.Model):
    """One answer about one pair. Pairs are stored canonically: ``item_a_id < item_b_id``."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judgments")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.PROTECT, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=12, choices=Label.choices)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="judgments",
        help_text="Empty for imported judgments.",
    )
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ANNOTATED)
    provenance = models.CharField(max_length=300, blank=True)
    client_id = models.UUIDField(unique=True, default=uuid.uuid4, editable=False)
    elapsed_ms = models.PositiveIntegerField(null=True, blank=True)
    is_gold = models.BooleanField(default=False, help_text="Answer to a gold pair.")
    reasons = models.JSONField(
        default=list,
        db_default=[],  # rows inserted in bulk without the column (benchmarks' raw SQL, COPY)
        blank=True,
        help_text="The fields that decided a comparable or incomparable answer (record "
        "studies; optional, among the fields the pair differs in: "
        "annotation/reasons.py).",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(item_a__lt=F("item_b")), name="judgment_canonical_pair"
            ),
            # A person answers a pair once (undo, then answer again); imports are exempt.
            models.UniqueConstraint(
                fields=["study", "annotator", "item_a", "item_b"],
                condition=Q(source="annotated", annotator__isnull=False),
                name="judgment_once_per_annotator",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "id"], name="judgment_study_id"),
            models.Index(fields=["study", "annotator", "id"], name="judgment_study_annotator"),
            models.Index(fields=["study", "item_a", "item_b"], name="judgment_study_pair"),
        ]

    def __str__(self) -> str:
        return f"{self.item_a_id}-{self.item_b_id}: {self.label}"


class PairSkip(models.Model):
    """An annotator passed on a pair (key S): not an answer, and not offered to them again."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(item_a__lt=F("item_b")), name="skip_canonical_pair"),
            models.UniqueConstraint(
                fields=["study", "annotator", "item_a", "item_b"], name="skip_once_per_annotator"
            ),
        ]

    def __str__(self) -> str:
        return f"skip {self.item_a_id}-{self.item_b_id} by {self.annotator_id}"


class PairComment(models.Model):
    """A short note on a pair by an annotator (key C), for the study's reviewers."""

    MAX_LENGTH = 500

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pair_comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    text = models.CharField(max_length=MAX_LENGTH)
    client_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(item_a__lt=F("item_b")), name="comment_canonical_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"comment on {self.item_a_id}-{self.item_b_id} by {self.author_id}"
