"""A cohort comparison: for one member attribute of a study, the figures that say how its
cohorts' metrics differ (``learning/cohorts/``), computed by the worker after a pooled refit."""

from __future__ import annotations

from django.db import models

from annotation.models import Study


class CohortReport(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="cohort_reports")
    attribute = models.CharField(max_length=40)
    key = models.CharField(
        max_length=64,
        help_text="What it was computed from: the pooled version and the members' values "
        "(a hash); the same key is not computed twice.",
    )
    judgment_watermark = models.BigIntegerField(default=0)
    figures = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "attribute", "key"], name="one_cohort_report_per_input"
            ),
        ]

    def __str__(self) -> str:
        return f"cohorts by {self.attribute} in {self.study}"
