"""DRF serializers: request bodies are validated here, then passed to one service call."""

from __future__ import annotations

from rest_framework import serializers

from spaces.models import Item, attach_spaces

from .models import (
    MAX_ELAPSED_MS,
    Label,
    PairComment,
    PairJudgment,
    Study,
)

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


_DATETIME = serializers.DateTimeField()


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


def judgment_data(judgment: PairJudgment, items: dict[int, dict] | None = None) -> dict:
    """``JudgmentSerializer(judgment).data`` without building three serializers per answer
    (DRF's ModelSerializer builds its fields on every instantiation: ~1 ms per answer);
    ``items``: the two items' data by id when the judgment carries ids only."""
    if items is None:
        attach_spaces([judgment.item_a, judgment.item_b])
        item_a, item_b = item_data(judgment.item_a), item_data(judgment.item_b)
    else:
        item_a, item_b = items[judgment.item_a_id], items[judgment.item_b_id]
    return {
        "id": judgment.pk,
        "client_id": str(judgment.client_id),
        "item_a": item_a,
        "item_b": item_b,
        "label": judgment.label,
        "elapsed_ms": judgment.elapsed_ms,
        "annotator": judgment.annotator.username if judgment.annotator_id else None,
        "source": judgment.source,
        "created_at": _DATETIME.to_representation(judgment.created_at),
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


class JudgmentListSerializer(serializers.ListSerializer):
    def to_representation(self, data):
        judgments = list(data.all() if hasattr(data, "all") else data)
        attach_spaces([item for j in judgments for item in (j.item_a, j.item_b)])
        return super().to_representation(judgments)


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
        list_serializer_class = JudgmentListSerializer


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


class JudgmentBatchSerializer(serializers.Serializer):
    """The request of the batch endpoint (documentation; each answer is checked on its own)."""

    answers = JudgmentCreateSerializer(many=True, help_text="At most JUDGMENT_BATCH_MAX (50).")


class BatchResultSerializer(serializers.Serializer):
    client_id = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["created", "duplicate", "error", "throttled"],
        help_text="created (201 alone), duplicate (a retry: the stored answer, 200 alone), "
        "error (nothing stored; see detail), throttled (nothing stored: send it again after "
        "retry_after seconds).",
    )
    judgment = JudgmentSerializer(allow_null=True)
    detail = serializers.CharField(allow_blank=True)
    retry_after = serializers.FloatField(required=False)


class JudgmentBatchResponseSerializer(serializers.Serializer):
    results = BatchResultSerializer(many=True, help_text="One per answer, in the request's order.")
    next_pair = NextPairSerializer(required=False, help_text="With next=1 (or more).")
    next_pairs = NextPairSerializer(
        many=True, required=False, help_text="With next=n > 1: up to n distinct next pairs."
    )
