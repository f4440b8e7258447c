"""DRF serializers: request bodies are validated here, then passed to one service call."""

from __future__ import annotations

from rest_framework import serializers

from spaces.models import Item

from .models import ComparableGroup, GroupEdit, Label, PairComment, PairJudgment, Study
from .services import MAX_ELAPSED_MS, MAX_GROUP_NAME, MAX_GROUP_SIZE

MAX_ID = 2**63 - 1  # a database bigint; larger ids are refused (400), not an overflow (500)


def item_id_field() -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=MAX_ID)


class StrictUUIDField(serializers.UUIDField):
    """A UUID given as text only (DRF would turn the number 5 into 00000000-…-000000000005)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class TextField(serializers.CharField):
    """A CharField refusing lone UTF-16 surrogates (valid JSON escapes no database stores)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise serializers.ValidationError("must be valid Unicode text.") from None
        return value


class ItemSerializer(serializers.ModelSerializer):
    display = serializers.CharField(read_only=True)

    class Meta:
        model = Item
        fields = ["id", "key", "display", "kind", "payload"]


class ItemBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = ["id", "key"]


class StudySerializer(serializers.ModelSerializer):
    space = serializers.IntegerField(source="space_id", read_only=True)
    space_name = serializers.CharField(source="space.name", read_only=True)
    role = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "space",
            "space_name",
            "mode",
            "strategy",
            "overlap",
            "target_per_annotator",
            "is_active",
            "role",
            "instructions",
        ]

    def get_role(self, study) -> str | None:
        return self.context.get("roles", {}).get(study.pk)


class NextPairSerializer(serializers.Serializer):
    done = serializers.BooleanField()
    complete = serializers.BooleanField(
        help_text="The annotator reached the target of a study that stops there."
    )
    left = ItemSerializer(allow_null=True)
    right = ItemSerializer(allow_null=True)


class JudgmentCreateSerializer(serializers.Serializer):
    item_a = item_id_field()
    item_b = item_id_field()
    label = serializers.ChoiceField(choices=Label.choices)
    client_id = StrictUUIDField()
    elapsed_ms = serializers.IntegerField(
        min_value=0, max_value=MAX_ELAPSED_MS, required=False, allow_null=True
    )

    def validate(self, attrs):
        if attrs["item_a"] == attrs["item_b"]:
            raise serializers.ValidationError("item_a and item_b must be two different items.")
        return attrs


class PairSerializer(serializers.Serializer):
    item_a = item_id_field()
    item_b = item_id_field()

    def validate(self, attrs):
        if attrs["item_a"] == attrs["item_b"]:
            raise serializers.ValidationError("item_a and item_b must be two different items.")
        return attrs


class CommentCreateSerializer(PairSerializer):
    text = serializers.CharField(max_length=PairComment.MAX_LENGTH)
    client_id = StrictUUIDField()


class JudgmentSerializer(serializers.ModelSerializer):
    item_a = ItemSerializer(read_only=True)
    item_b = ItemSerializer(read_only=True)
    annotator = serializers.CharField(source="annotator.username", default=None, read_only=True)

    class Meta:
        model = PairJudgment
        fields = [
            "id",
            "client_id",
            "item_a",
            "item_b",
            "label",
            "elapsed_ms",
            "annotator",
            "source",
            "created_at",
        ]


class GroupEditSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", default=None, read_only=True)
    item = ItemBriefSerializer(read_only=True)

    class Meta:
        model = GroupEdit
        fields = ["id", "action", "item", "detail", "revision", "user", "created_at"]


class GroupSerializer(serializers.ModelSerializer):
    size = serializers.IntegerField(read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = ComparableGroup
        fields = ["id", "name", "size", "created_by", "source", "revision", "updated_at"]


class GroupDetailSerializer(GroupSerializer):
    members = ItemSerializer(many=True, read_only=True)
    history = GroupEditSerializer(many=True, read_only=True)

    class Meta(GroupSerializer.Meta):
        fields = [*GroupSerializer.Meta.fields, "members", "history"]


class GroupCreateSerializer(serializers.Serializer):
    name = TextField(max_length=MAX_GROUP_NAME)
    members = serializers.ListField(child=item_id_field(), max_length=MAX_GROUP_SIZE, default=list)


class GroupUpdateSerializer(serializers.Serializer):
    name = TextField(max_length=MAX_GROUP_NAME, required=False)
    add = serializers.ListField(child=item_id_field(), max_length=MAX_GROUP_SIZE, default=list)
    remove = serializers.ListField(child=item_id_field(), max_length=MAX_GROUP_SIZE, default=list)


class HeterogeneitySerializer(serializers.Serializer):
    method = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    warn = serializers.BooleanField()
    explanation = serializers.CharField()
    random_share = serializers.FloatField(
        allow_null=True,
        help_text="Share of random groups of the same size from the pool that are at least as "
        "homogeneous (a one-sided empirical p-value); warn above 0.05.",
    )
    random_median = serializers.FloatField(allow_null=True)
    random_low = serializers.FloatField(allow_null=True, help_text="5th percentile.")
    random_high = serializers.FloatField(allow_null=True, help_text="95th percentile.")


class SuggestionsSerializer(serializers.Serializer):
    size = serializers.IntegerField()
    heterogeneity = HeterogeneitySerializer()
    metric = serializers.SerializerMethodField()
    nearest_metric = ItemSerializer(many=True)
    nearest_euclid = ItemSerializer(many=True)

    def get_metric(self, obj) -> dict | None:
        metric = obj.metric
        if metric is None:
            return None
        return {
            "id": metric.version_id,
            "method": metric.method,
            "label": metric.label,
            "is_published": metric.is_published,
        }
