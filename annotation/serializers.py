"""DRF serializers: request bodies are validated here, then passed to one service call.

Here: the request fields every endpoint shares (ids, UUIDs, text), items as annotators see them,
studies. The labelling page's shapes: ``annotation/labelling/serializers.py``; the groups page's:
``annotation/groups/serializers.py``.
"""

from __future__ import annotations

from rest_framework import serializers

from spaces.models import Item, attach_spaces

from .models import Study

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


class ItemListSerializer(serializers.ListSerializer):
    """Items read their spaces' hidden columns once per space, not once per item."""

    def to_representation(self, data):
        items = list(data.all() if hasattr(data, "all") else data)
        attach_spaces(items)
        return super().to_representation(items)


class ItemSerializer(serializers.ModelSerializer):
    """An item as annotators see it: a record's payload without its space's hidden columns
    (``Item.shown_payload``)."""

    display = serializers.CharField(read_only=True)
    payload = serializers.JSONField(source="shown_payload", read_only=True, allow_null=True)

    class Meta:
        model = Item
        fields = ["id", "key", "display", "kind", "payload"]
        list_serializer_class = ItemListSerializer


def item_data(item: Item) -> dict:
    """``ItemSerializer(item).data`` without building a serializer (the answer path's items;
    tests/annotation/test_batch.py checks they stay equal)."""
    return {
        "id": item.pk,
        "key": item.key,
        "display": item.display,
        "kind": item.kind,
        "payload": item.shown_payload,
    }


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


def error_text(errors) -> str:
    """A serializer's errors as one readable line ("label: … ; client_id: …")."""
    if isinstance(errors, dict):
        return "; ".join(
            f"{error_text(v)}" if k == "non_field_errors" else f"{k}: {error_text(v)}"
            for k, v in errors.items()
        )
    if isinstance(errors, list):
        return " ".join(error_text(e) for e in errors)
    return str(errors)
