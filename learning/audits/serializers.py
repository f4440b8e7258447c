"""The audit API's shapes, for the OpenAPI schema (the service checks the input itself, so that
the API and the page give the same messages)."""

from __future__ import annotations

from rest_framework import serializers

from learning.exports.schema import ValiditySerializer


class AuditCreateSerializer(serializers.Serializer):
    predictions = serializers.FileField(
        help_text="CSV or Parquet: key, score (a number), optional decision; for a record space "
        "also new records (rows with unknown keys carrying every field of the feature map) and "
        "counterfactual twins (keys of counterfactuals.csv, fields optional)."
    )
    version = serializers.IntegerField(
        required=False, help_text="A ready metric version of the study; default: the published."
    )
    k = serializers.IntegerField(required=False, default=10, help_text="Neighbours per item.")
    epsilon = serializers.FloatField(
        required=False, help_text="Pairs within this d_Σ are checked; default from the metric."
    )
    lipschitz = serializers.FloatField(
        required=False, help_text="L: a violation's scores differ by more than L·d_Σ; default 1."
    )
    name = serializers.CharField(required=False, max_length=200)
    delta = serializers.FloatField(
        required=False,
        help_text="Counterfactual twins: a pair moved when its scores differ by more; 0.01.",
    )


class _Version(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    method = serializers.CharField()
    is_published = serializers.BooleanField()
    validity = ValiditySerializer(help_text="The version's verdict, its figures, any override.")


class AuditSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    stage = serializers.CharField()
    progress = serializers.FloatField(help_text="0 to 1")
    error = serializers.CharField()
    study = serializers.IntegerField()
    version = _Version()
    k = serializers.IntegerField()
    epsilon = serializers.FloatField(allow_null=True, help_text="As used (when done) or asked.")
    lipschitz = serializers.FloatField(allow_null=True)
    items = serializers.IntegerField()
    new_records = serializers.IntegerField()
    has_decision = serializers.BooleanField()
    violations = serializers.IntegerField(help_text="Violating pairs (all, not only stored).")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    violation_rate = serializers.FloatField(allow_null=True)
    violation_rate_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    mean_gap = serializers.FloatField(allow_null=True)
    mean_gap_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    worst_gap = serializers.FloatField(allow_null=True)
    worst_gap_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    consistency = serializers.FloatField(allow_null=True)
    consistency_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    decision_flip = serializers.FloatField(allow_null=True)
    decision_flip_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    delta = serializers.FloatField(help_text="The twins' δ.")
    counterfactual = serializers.DictField(
        help_text="Per sensitive column (twins uploaded): pairs, moved_share, mean_abs_change, "
        "max_abs_change, decision_flips, intervals {name: [low, high]}."
    )
    metric_uncertainty = serializers.DictField(
        help_text="The audit under bootstrap refits of Σ (by pair, the version's recipe): status, "
        "refits, fitted, basis, verdict, kept_violations, and per figure (violation_rate, "
        "mean_gap, worst_gap, consistency, decision_flip, all_pairs_rate, within_share) its range "
        "across plausible metrics {low, high, min, max} beside the audit's estimate and interval."
    )
    summary = serializers.DictField(help_text="Every figure under Σ and Euclidean, ε, L, timings.")
    links = serializers.DictField(child=serializers.URLField())
