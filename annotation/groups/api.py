"""The API of group curation: groups (list, create, read, rename, add and remove members), the
suggestions for a group being edited, and the item search that finds members."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation import selectors
from annotation.access import Action, can_edit_group, require_space_reader, study_get
from annotation.api import AnnotationAPIView, id_list, int_param
from annotation.groups import selectors as group_selectors
from annotation.groups import services
from annotation.groups.serializers import (
    GroupCreateSerializer,
    GroupDetailSerializer,
    GroupSerializer,
    GroupUpdateSerializer,
    SuggestionsSerializer,
)
from annotation.groups.suggestions import group_suggestions
from annotation.models import ComparableGroup
from annotation.serializers import ItemSerializer
from common.errors import NotAllowed


class GroupListCreate(AnnotationAPIView):
    max_body_bytes = 64 * 1024

    @extend_schema(responses=GroupSerializer(many=True))
    def get(self, request, study_id: int):
        study = self.study
        groups = selectors.groups_visible(study=study, user=request.user)[:500]
        return Response(GroupSerializer(groups, many=True).data)

    @extend_schema(request=GroupCreateSerializer, responses=GroupDetailSerializer)
    def post(self, request, study_id: int):
        study = self.study
        body = GroupCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        group = services.group_create(
            study=study,
            user=request.user,
            name=body.validated_data["name"],
            member_ids=body.validated_data["members"],
        )
        return Response(_group_detail(group), status=status.HTTP_201_CREATED)


def _group_detail(group: ComparableGroup) -> dict:
    group.size = group.members.count()
    group.history = group_selectors.group_history(group=group)
    data = GroupDetailSerializer(group).data
    data["members"] = ItemSerializer(group_selectors.group_members(group=group), many=True).data
    return data


class GroupDetail(AnnotationAPIView):
    max_body_bytes = 64 * 1024

    def visible_group(self, group_id: int) -> ComparableGroup:
        groups = selectors.groups_visible(study=self.study, user=self.request.user)
        return get_object_or_404(groups, pk=group_id)

    @extend_schema(responses=GroupDetailSerializer)
    def get(self, request, study_id: int, group_id: int):
        return Response(_group_detail(self.visible_group(group_id)))

    @extend_schema(request=GroupUpdateSerializer, responses=GroupDetailSerializer)
    def patch(self, request, study_id: int, group_id: int):
        group = self.visible_group(group_id)
        if not can_edit_group(request.user, group):
            raise NotAllowed("Only the group's creator or a reviewer/admin can edit this group.")
        body = GroupUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        group = services.group_update(
            group=group,
            user=request.user,
            name=body.validated_data.get("name"),
            add=body.validated_data["add"],
            remove=body.validated_data["remove"],
        )
        return Response(_group_detail(group))


class SuggestionsView(AnnotationAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("group", int, description="Start from this saved group's members."),
            OpenApiParameter("members", str, description="Comma-separated item ids to add."),
            OpenApiParameter("remove", str, description="Comma-separated item ids to leave out."),
            OpenApiParameter("k", int, description="How many suggestions per metric (≤ 50)."),
        ],
        responses=SuggestionsSerializer,
    )
    def get(self, request, study_id: int):
        """Suggestions for a group being edited: a saved group's members (``group``), plus
        ``members``, minus ``remove`` — so the URL stays short for large saved groups."""
        study = self.study
        members = set(id_list(request.query_params.get("members", ""), "members"))
        group_id = int_param(request, "group", 0, lo=0, hi=2**62)
        if group_id:
            group = get_object_or_404(
                selectors.groups_visible(study=study, user=request.user), pk=group_id
            )
            members |= set(group.members.values_list("id", flat=True))
        members -= set(id_list(request.query_params.get("remove", ""), "remove"))
        k = int_param(request, "k", 10, lo=1, hi=50)
        result = group_suggestions(study=study, member_ids=members, k=k)
        return Response(SuggestionsSerializer(result).data)


class ItemSearch(AnnotationAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                str,
                description="Key prefix (case-insensitive); in record and text spaces, text "
                "found in the key, the text or any field (`field:value` for one field).",
            ),
            OpenApiParameter("space", int, description="Embedding space id."),
            OpenApiParameter("study", int, description="Restrict to a study's item pool."),
            OpenApiParameter("limit", int, description="At most 50 (default 20)."),
        ],
        responses=ItemSerializer(many=True),
    )
    def get(self, request):
        limit = int_param(request, "limit", 20, lo=1, hi=50)
        study_id = int_param(request, "study", 0, lo=0, hi=2**62)
        space_id = int_param(request, "space", 0, lo=0, hi=2**62)
        study = None
        if study_id:
            study = study_get(request.user, study_id, Action.VIEW)
            space_id = study.space_id
        elif not space_id:
            raise ValidationError({"space": "give a space or a study."})
        else:
            require_space_reader(request.user, space_id)
        query = request.query_params.get("q", "")
        if len(query) > 255:
            raise ValidationError({"q": "at most 255 characters."})
        items = group_selectors.item_search(
            space_id=space_id, query=query, study=study, limit=limit
        )
        return Response(ItemSerializer(items, many=True).data)
