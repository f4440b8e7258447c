"""The shapes of the labelling page's requests and answers: judgments (one, a batch), the next
pair, skips and comments."""

from __future__ import annotations

from rest_framework import serializers

from annotation.models import MAX_ELAPSED_MS, Label, PairComment, PairJudgment
from annotation.reasons import MAX_FIELD_CHARS, MAX_REASONS
from annotation.serializers import ItemSerializer, StrictUUIDField, item_data, item_id_field
from spaces.models import attach_spaces

_DATETIME = serializers.DateTimeField()


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
        "reasons": list(judgment.reasons or []),
        "created_at": _DATETIME.to_representation(judgment.created_at),
    }


class NextPairSerializer(serializers.Serializer):
    done = serializers.BooleanField()
    complete = serializers.BooleanField(
        help_text="The annotator reached the target of a study that stops there."
    )
    left = ItemSerializer(allow_null=True)
    right = ItemSerializer(allow_null=True)
    order = serializers.ListField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="Where the pair stands in the order the server hands pairs out (two integers, "
        "compared in turn): pairs from requests in flight together may arrive in another order; "
        "show the lower first (asked pairs come before the strategy's).",
    )


class JudgmentCreateSerializer(serializers.Serializer):
    item_a = item_id_field()
    item_b = item_id_field()
    label = serializers.ChoiceField(choices=Label.choices)
    client_id = StrictUUIDField()
    elapsed_ms = serializers.IntegerField(
        min_value=0, max_value=MAX_ELAPSED_MS, required=False, allow_null=True
    )
    reasons = serializers.ListField(
        child=serializers.CharField(max_length=MAX_FIELD_CHARS, trim_whitespace=False),
        max_length=MAX_REASONS,
        required=False,
        help_text="Optional, with comparable or incomparable in a record study: the fields "
        "that decided the answer, among those the two records differ in.",
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
            "reasons",
            "created_at",
        ]
        list_serializer_class = JudgmentListSerializer


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
