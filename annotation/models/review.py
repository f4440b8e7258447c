"""Adjudicated labels: a reviewer's decision on a pair the annotators disagreed about."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from .judgments import Label
from .studies import Study


class Adjudication(models.Model):
    """The label a reviewer or admin settled on for one pair of a study.

    The fit reads it in place of every raw answer to the pair
    (``annotation/review/fit.py: fit_rows``). A changed decision is a new row (the old one is
    deleted), so the highest id and the count say whether a study's decisions changed
    (``adjudication_mark``). Canonical like every pair: ``item_a_id < item_b_id``.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="adjudications")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.PROTECT, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.PROTECT, related_name="+")
    label = models.CharField(
        max_length=12, choices=[c for c in Label.choices if c[0] != Label.UNSURE]
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(item_a__lt=F("item_b")), name="adjudication_canonical_pair"
            ),
            models.UniqueConstraint(
                fields=["study", "item_a", "item_b"], name="adjudication_unique_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"adjudicated {self.item_a_id}-{self.item_b_id}: {self.label}"
