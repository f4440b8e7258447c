"""Model audits: a model's scores on a study's items checked under a metric version, and the
violations found (the worst ``AUDIT_MAX_STORED_VIOLATIONS``), each of which can be sent back to
the annotators as a candidate pair (``asked_at``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Study

from .metrics import MetricVersion


class AuditStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ModelAudit(models.Model):
    """One upload of scores (``key,score[,decision]``) audited under one metric version.

    ``predictions`` is the checked, normalised input (a ``.npz``: item ids, scores, decision
    codes, and the φ vectors and fields of new records) written by the web request; the worker
    reads it, claims the audit (``lease_until``), and stores ``summary`` and the violations in
    one transaction.
    """

    Status = AuditStatus

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="model_audits")
    version = models.ForeignKey(MetricVersion, on_delete=models.CASCADE, related_name="audits")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    k = models.PositiveSmallIntegerField(help_text="Neighbours per item.")
    epsilon = models.FloatField(null=True, blank=True, help_text="As asked; empty: the default.")
    lipschitz = models.FloatField(null=True, blank=True, help_text="As asked; empty: 1.")
    delta = models.FloatField(
        null=True, blank=True, help_text="Twins: a score change above δ moves; empty: 0.01."
    )
    predictions = models.FileField(upload_to="audits/", max_length=500)
    original_name = models.CharField(max_length=255, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    new_records = models.PositiveIntegerField(default=0)
    has_decision = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=60, blank=True)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    violation_count = models.PositiveIntegerField(default=0, help_text="All violating pairs.")
    seconds = models.FloatField(null=True, blank=True)
    uncertainty = models.JSONField(
        default=dict,
        blank=True,
        help_text="The audit under bootstrap refits of Σ (learning/audits/uncertainty.py).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["study", "-id"], name="audit_study_recent")]

    def __str__(self) -> str:
        return f"audit {self.name!r} of study {self.study_id} ({self.status})"

    def figure(self, metric: str, name: str) -> float | None:
        """A summary figure's estimate (``metric``: sigma or euclidean), None before it is done."""
        value = (self.summary.get(metric) or {}).get(name)
        return value.get("estimate") if isinstance(value, dict) else value


class AuditViolation(models.Model):
    """A violating pair (canonical: ``item_a`` has the smaller id; new records carry no item but
    their fields in ``record_a``/``record_b``), ranked worst first within its audit (by the
    Lipschitz constant it demands, ``learning.core.audit.violating_pairs``)."""

    audit = models.ForeignKey(ModelAudit, on_delete=models.CASCADE, related_name="violations")
    rank = models.PositiveIntegerField()
    item_a = models.ForeignKey(
        "spaces.Item", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    item_b = models.ForeignKey(
        "spaces.Item", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    key_a = models.CharField(max_length=255)
    key_b = models.CharField(max_length=255)
    record_a = models.JSONField(null=True, blank=True, help_text="A new record's fields.")
    record_b = models.JSONField(null=True, blank=True, help_text="A new record's fields.")
    distance = models.FloatField(help_text="d_Σ")
    euclidean = models.FloatField(help_text="‖φ(a) − φ(b)‖ on the summary's Euclidean scale")
    score_a = models.FloatField()
    score_b = models.FloatField()
    gap = models.FloatField(help_text="|score_a − score_b| − L·d_Σ")
    needed = models.FloatField(
        help_text="|score_a − score_b| / d_Σ: the Lipschitz constant the pair demands (worst "
        "first; d_Σ floored near 0)."
    )
    decision_a = models.CharField(max_length=50, blank=True)
    decision_b = models.CharField(max_length=50, blank=True)
    differing = models.CharField(
        max_length=2000, blank=True, help_text="Fields whose values differ, as ',f1,f2,'."
    )
    shares = models.JSONField(default=dict, blank=True, help_text="Field → share of d_Σ².")
    asked_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was sent to the annotators as a candidate pair."
    )

    class Meta:
        ordering = ["audit", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["audit", "rank"], name="audit_violation_rank"),
        ]

    def __str__(self) -> str:
        return f"{self.key_a} / {self.key_b}: gap {self.gap:.3g}"

    @property
    def differing_fields(self) -> list[str]:
        return [f for f in self.differing.split(",") if f]


class AuditSettings(models.Model):
    """A record study's audit settings, set by its admins: the **sensitive columns** whose
    counterfactual twins the audit offers (``learning.audits.twins``)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="audit_settings")
    sensitive_columns = models.JSONField(
        default=list, blank=True, help_text='Record fields, e.g. ["sex", "race"].'
    )

    def __str__(self) -> str:
        return f"audit settings of study {self.study_id}"
