"""The adjudication API: a study's shared pairs (disagreements to resolve first, most
uncertain under the current metric on top) and a decision on one pair. Reviewers and admins;
the same reads and writes as the page (``selectors.py``, ``services.py``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation.access import Action
from annotation.api import AnnotationAPIView, int_param
from annotation.models import Label
from annotation.review import selectors, services
from annotation.review.selectors import Agreement
from annotation.serializers import item_id_field


class DecisionSerializer(serializers.Serializer):
    item_a = item_id_field()
    item_b = item_id_field()
    label = serializers.ChoiceField(choices=list(services.DECISIONS))
    gold = serializers.BooleanField(default=False)


class SharedPairSerializer(serializers.Serializer):
    item_a = serializers.IntegerField()
    item_b = serializers.IntegerField()
    key_a = serializers.CharField()
    key_b = serializers.CharField()
    comparable = serializers.IntegerField()
    incomparable = serializers.IntegerField()
    unsure = serializers.IntegerField()
    p_comparable = serializers.FloatField(allow_null=True)
    adjudicated = serializers.CharField(allow_null=True)


class DisagreementsSerializer(serializers.Serializer):
    resolved = serializers.IntegerField()
    disagreements = serializers.IntegerField()
    shared = serializers.IntegerField()
    metric = serializers.CharField()
    count = serializers.IntegerField()
    pairs = SharedPairSerializer(many=True)


class ReviewAPIView(AnnotationAPIView):
    study_action = Action.REVIEW
    study_refused = services.REFUSED


def _choice(request, name: str, choices) -> str:
    value = request.query_params.get(name, "")
    if value and value not in choices:
        raise ValidationError({name: f"must be one of {', '.join(choices)}."})
    return value


class DisagreementList(ReviewAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("agreement", str, enum=[v for v, _ in Agreement.CHOICES]),
            OpenApiParameter("label", str, enum=list(Label.values)),
            OpenApiParameter("annotator", int),
            OpenApiParameter("limit", int),
        ],
        responses=DisagreementsSerializer,
    )
    def get(self, request, study_id: int):
        """Pairs answered two or more times (default: disagreements not yet resolved), most
        important to the fit first, and how many disagreements are resolved."""
        agreement = _choice(request, "agreement", [v for v, _ in Agreement.CHOICES])
        label = _choice(request, "label", list(Label.values))
        annotator = request.query_params.get("annotator") or None
        if annotator is not None:
            annotator = int_param(request, "annotator", 0, lo=1, hi=2**63 - 1)
        limit = int_param(request, "limit", 100, lo=1, hi=1000)
        review = selectors.review_pairs(
            study=self.study,
            agreement=agreement or Agreement.OPEN,
            label=label,
            annotator_id=annotator,
            limit=limit,
        )
        data = {
            "resolved": review.resolved,
            "disagreements": review.disagreements,
            "shared": review.shared,
            "metric": review.metric,
            "count": review.count,
            "pairs": selectors.keys_attach(review.pairs),
        }
        return Response(DisagreementsSerializer(data).data)


class AdjudicationCreate(ReviewAPIView):
    @extend_schema(request=DecisionSerializer, responses={201: DecisionSerializer})
    def post(self, request, study_id: int):
        """Settle a pair on comparable or incomparable; the fit reads this label in place of
        the pair's answers. ``gold``: also a gold pair (admins only)."""
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        decision = services.adjudicate(
            study=self.study,
            user=request.user,
            item_a_id=data["item_a"],
            item_b_id=data["item_b"],
            label=data["label"],
            gold=data["gold"],
        )
        out = {
            "item_a": decision.item_a_id,
            "item_b": decision.item_b_id,
            "label": decision.label,
            "gold": data["gold"],
        }
        return Response(out, status=status.HTTP_201_CREATED)
