"""What is learned: metric versions (Sigma), WEAT suites and their results."""

from __future__ import annotations

import numpy as np
from django.db import models
from django.db.models import Q

from annotation.models import EmbeddingSpace, Study


class MetricVersion(models.Model):
    class Method(models.TextChoices):
        FACE = "face", "FACE"
        EXPLORE = "explore", "EXPLORE"

    class Status(models.TextChoices):
        FITTING = "fitting", "fitting"
        READY = "ready", "ready"
        FAILED = "failed", "failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="metric_versions")
    method = models.CharField(max_length=10, choices=Method.choices)
    label = models.CharField(
        max_length=50, blank=True, help_text="Short name for tables, e.g. face-10."
    )
    parameters = models.JSONField(default=dict, blank=True)
    sigma = models.FileField(upload_to="sigmas/", max_length=500, blank=True)
    sigma_sha256 = models.CharField(max_length=64, blank=True)
    dimension = models.PositiveIntegerField(null=True, blank=True)
    judgment_watermark = models.BigIntegerField(
        default=0, help_text="Highest judgment id included in the fit."
    )
    group_watermark = models.BigIntegerField(
        default=0, help_text="Study group revision included in the fit."
    )
    counts = models.JSONField(default=dict, blank=True)
    diagnostics = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.FITTING)
    error = models.TextField(blank=True)
    fit_seconds = models.FloatField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children"
    )
    is_published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "method"],
                condition=Q(is_published=True),
                name="one_published_version_per_study_method",
            ),
        ]
        indexes = [models.Index(fields=["study", "method", "status", "id"], name="mv_lookup")]

    def __str__(self) -> str:
        return f"{self.study} {self.label or self.method} #{self.pk}"

    def load_sigma(self) -> np.ndarray:
        return np.load(self.sigma.path)


class WeatSuite(models.Model):
    """A named set of WEAT tests, attached to studies whose metrics it evaluates."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    provenance = models.TextField(blank=True)
    studies = models.ManyToManyField(Study, blank=True, related_name="weat_suites")

    def __str__(self) -> str:
        return self.name


class WeatTest(models.Model):
    class Kind(models.TextChoices):
        MEANINGFUL = "meaningful", "meaningful association"
        UNFAIR = "unfair", "unfair association"

    suite = models.ForeignKey(WeatSuite, on_delete=models.CASCADE, related_name="tests")
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=200, help_text="<first target> / <first attribute>")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    x_name = models.CharField(max_length=100)
    y_name = models.CharField(max_length=100)
    a_name = models.CharField(max_length=100)
    b_name = models.CharField(max_length=100)
    x_words = models.JSONField(default=list)
    y_words = models.JSONField(default=list)
    a_words = models.JSONField(default=list)
    b_words = models.JSONField(default=list)

    class Meta:
        ordering = ["suite", "position"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "name"], name="weat_test_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class WeatResult(models.Model):
    """One test under one metric: a learned version, or the Euclidean baseline of a space."""

    test = models.ForeignKey(WeatTest, on_delete=models.CASCADE, related_name="results")
    space = models.ForeignKey(EmbeddingSpace, on_delete=models.CASCADE, related_name="+")
    metric_version = models.ForeignKey(
        MetricVersion,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="weat_results",
        help_text="Empty for the Euclidean baseline.",
    )
    metric = models.CharField(max_length=50, help_text="euclidean, explore, face-<k>")
    p_value = models.FloatField()
    effect_size = models.FloatField()
    statistic = models.FloatField()
    n_partitions = models.BigIntegerField()
    exact = models.BooleanField()
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True, help_text="s(w) per target word.")
    missing_words = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["test", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["test", "space"],
                condition=Q(metric_version__isnull=True),
                name="one_euclidean_result_per_test_space",
            ),
            models.UniqueConstraint(
                fields=["test", "metric_version"],
                condition=Q(metric_version__isnull=False),
                name="one_result_per_test_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.test} under {self.metric}"
