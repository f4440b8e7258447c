"""The REST API (DRF): thin views — access check, serializer validation, one service call.

Here: the base view every endpoint of annotation's rooms extends, their query-parameter readers,
and the studies. The endpoints of the labelling page: ``annotation/labelling/api.py``; of the
groups page: ``annotation/groups/api.py``; routes: ``annotation/urls_api.py``.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import PayloadTooLarge

from . import selectors
from .access import Action, StudyAccess, study_role
from .models import Study
from .serializers import StudySerializer


class AnnotationAPIView(APIView):
    """Study access from the URL (``annotation.access.StudyAccess``: the study is ``self.study``)
    and a refusal of oversized bodies before they are parsed. Errors map project-wide
    (``common.errors.api_exception_handler``)."""

    permission_classes = [StudyAccess]
    study_action = Action.VIEW
    max_body_bytes = 8 * 1024
    study: Study

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.refuse_oversized(request)

    def refuse_oversized(self, request) -> None:
        if request.method in {"POST", "PUT", "PATCH"}:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > self.max_body_bytes:
                raise PayloadTooLarge(
                    f"Request body too large ({length} bytes; at most {self.max_body_bytes})."
                )


def int_param(request, name: str, default: int, *, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: "must be an integer."}) from None
    if not lo <= value <= hi:
        raise ValidationError({name: f"must be between {lo} and {hi}."})
    return value


def id_list(raw: str, name: str, *, max_len: int = 1000) -> list[int]:
    parts = [p.strip() for p in raw.replace("-", ",").split(",") if p.strip()] if raw else []
    if len(parts) > max_len:
        raise ValidationError({name: f"at most {max_len} ids."})
    if not all(p.isascii() and p.isdigit() and len(p) <= 18 for p in parts):
        raise ValidationError({name: "must be comma-separated item ids."})
    return [int(p) for p in parts]


class StudyList(AnnotationAPIView):
    @extend_schema(responses=StudySerializer(many=True))
    def get(self, request):
        pairs = selectors.studies_for_user(user=request.user)
        roles = {study.pk: role for study, role in pairs}
        data = StudySerializer([s for s, _ in pairs], many=True, context={"roles": roles}).data
        return Response(data)


class StudyDetail(AnnotationAPIView):
    @extend_schema(responses=StudySerializer)
    def get(self, request, study_id: int):
        study = self.study
        roles = {study.pk: study_role(request.user, study)}
        return Response(StudySerializer(study, context={"roles": roles}).data)
