"""The shapes of group curation's requests and answers: groups, their history, suggestions."""

from __future__ import annotations

from rest_framework import serializers

from annotation.models import MAX_GROUP_NAME, MAX_GROUP_SIZE, ComparableGroup, GroupEdit
from annotation.serializers import ItemSerializer, TextField, item_id_field
from spaces.models import Item


class ItemBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = ["id", "key"]


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
