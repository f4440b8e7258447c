"""The OpenAPI shapes of the version metadata and the ``validity`` object (drf-spectacular).

Documentation only: the views build these dicts themselves (``learning/exports/api.py:
version_metadata``, ``learning/versions/validity.py: validity_of``); these serializers name
their fields and types in the schema at ``/api/schema/``.
"""

from __future__ import annotations

from rest_framework import serializers

from learning.versions.validity import VERDICTS


class ValidityFiguresSerializer(serializers.Serializer):
    basis = serializers.CharField(
        allow_null=True, help_text='"new items" (held-out people) or "held-out pairs" (older).'
    )
    gain = serializers.FloatField(
        allow_null=True, help_text="Held-out log-likelihood gain over the constant, per answer."
    )
    gain_interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="Its 95 % interval [low, high]."
    )
    auc = serializers.FloatField(allow_null=True, help_text="Held-out AUC of d² for the labels.")
    items = serializers.IntegerField(allow_null=True, help_text="Held-out items scored.")
    pairs = serializers.IntegerField(allow_null=True, help_text="Held-out pairs scored.")


class OverrideSerializer(serializers.Serializer):
    reason = serializers.CharField()
    by = serializers.CharField(allow_null=True, help_text="The admin's username (or a command).")
    at = serializers.DateTimeField()


class ValiditySerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=list(VERDICTS))
    figures = ValidityFiguresSerializer()
    needs = serializers.CharField(help_text="What a verdict that is not informative lacks.")
    summary = serializers.CharField()
    override = OverrideSerializer(
        allow_null=True,
        help_text="Why it was published although not informative; null when it was not.",
    )


class VersionMetadataSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.JSONField()
    method = serializers.CharField()
    label = serializers.CharField()
    parameters = serializers.JSONField()
    dimension = serializers.IntegerField(allow_null=True)
    embedding_space = serializers.JSONField()
    judgment_watermark = serializers.IntegerField()
    group_watermark = serializers.IntegerField()
    counts = serializers.JSONField()
    status = serializers.CharField()
    is_published = serializers.BooleanField()
    published_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    fit_seconds = serializers.FloatField(allow_null=True)
    parent = serializers.IntegerField(allow_null=True)
    sigma_sha256 = serializers.CharField(allow_null=True)
    validity = ValiditySerializer()
    cohort = serializers.JSONField(
        allow_null=True,
        help_text='A cohort\'s metric: {attribute, value (or "equal"), cohorts: [{value, '
        "members, answers}], pooled_version}; null for the study's own fits.",
    )
    links = serializers.JSONField()


class PublishRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        max_length=1000,
        help_text="Needed when the version's verdict is not informative; recorded with it.",
    )


class PublishRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    validity = ValiditySerializer()
