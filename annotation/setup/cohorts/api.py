"""The set-up API of member attributes (cohorts): ``GET``/``POST /api/studies/<id>/member-
attributes/`` (define an attribute or change its values), ``PATCH /api/studies/<id>/members/
<membership id>/`` (a member's role, target and ``attributes``). Admins of the study only."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotation.models import MAX_NAME, MAX_VALUES, MemberAttribute
from annotation.serializers import TextField
from annotation.setup import members
from annotation.setup.api import MemberRead, MemberWrite, SetupView, _validated
from annotation.setup.cohorts import services as cohorts


class AttributeWrite(serializers.Serializer):
    name = TextField(max_length=MAX_NAME)
    values = serializers.ListField(
        child=TextField(max_length=MAX_NAME), min_length=2, max_length=MAX_VALUES
    )
    ask = serializers.BooleanField(
        default=False, help_text="Ask each member once on their first visit."
    )


class AttributeRead(serializers.ModelSerializer):
    class Meta:
        model = MemberAttribute
        fields = ["name", "values", "ask"]


class MemberAttributes(SetupView):
    max_body_bytes = 16 * 1024

    @extend_schema(responses=AttributeRead(many=True))
    def get(self, request, study_id: int):
        found = cohorts.study_attributes(study=self.study)
        return Response(AttributeRead(found, many=True).data)

    @extend_schema(request=AttributeWrite, responses={201: AttributeRead})
    def post(self, request, study_id: int):
        sent = _validated(AttributeWrite, request.data)
        attribute = cohorts.attribute_define(user=request.user, study=self.study, **sent)
        return Response(AttributeRead(attribute).data, status=201)


class MemberChange(MemberWrite):
    role = serializers.ChoiceField(MemberWrite().fields["role"].choices, required=False)


class MemberDetail(SetupView):
    max_body_bytes = 16 * 1024

    @extend_schema(request=MemberChange, responses=MemberRead)
    def patch(self, request, study_id: int, membership_id: int):
        membership = members.memberships_of(self.study, membership_id)
        if membership is None:
            raise NotFound("No such member.")
        sent = _validated(MemberChange, request.data)
        with transaction.atomic():
            if "role" in sent or "target" in sent:
                membership = members.member_change(
                    user=request.user,
                    membership=membership,
                    role=sent.get("role", membership.role),
                    target=sent.get("target", membership.target),
                )
            if "attributes" in sent:
                membership = cohorts.member_attributes_set(
                    user=request.user, membership=membership, attributes=sent["attributes"]
                )
        return Response(MemberRead(membership).data)
