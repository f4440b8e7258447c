"""Export API: metric versions (metadata and Sigma), judgments and groups.

Reviewers and admins of a study (and staff) may export; annotators get 403 and outsiders 404
(``annotation.access``). Authentication is
a personal API token (``Authorization: Bearer fm_…``, created on /account/tokens/) or the
browser session. Sigma downloads carry ``ETag: "<sha256 of the .npy file>"`` and answer
``If-None-Match`` with 304, so a training job can poll the published metric cheaply.
"""

from __future__ import annotations

import hashlib
import itertools

from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.tokens import ApiTokenAuthentication
from annotation.access import Action, StudyAccess, require
from annotation.models import Study
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput
from learning.evaluation.fields import fields_json, version_fields
from learning.exports import formats
from learning.exports.schema import (
    PublishRefusedSerializer,
    PublishRequestSerializer,
    VersionMetadataSerializer,
)
from learning.models import MetricVersion
from learning.versions.selectors import version_published
from learning.versions.storage import metric_version_publish
from learning.versions.validity import HEADER, NotInformative, validity_header, validity_of
from spaces.records.featuremap import feature_map_json

SIGMA_FORMATS = {
    "npy": ("application/octet-stream", formats.sigma_bytes),
    "json": ("application/json", formats.sigma_json),
    "csv": ("text/csv; charset=utf-8", formats.sigma_csv),
}
TABLE_FORMATS = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}


EXPORT_REFUSED = "Only reviewers and admins of this study can export its data."
PUBLISH_REFUSED = "Only an admin of the study can publish."


def etag_matches(request, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, as RFC 9110 asks for GET)."""
    header = request.headers.get("If-None-Match", "")
    if not header:
        return False
    if header.strip() == "*":
        return True
    candidates = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return etag in candidates


def version_metadata(version: MetricVersion, request) -> dict:
    space = version.study.space
    ready = version.status == MetricVersion.Status.READY and bool(version.sigma)
    links = {"self": request.build_absolute_uri(reverse("api-version", args=[version.pk]))}
    if ready:
        for fmt in SIGMA_FORMATS:
            url = reverse("api-version-sigma", args=[version.pk, fmt])
            links[f"sigma_{fmt}"] = request.build_absolute_uri(url)
    if space.feature_map:
        url = reverse("api-feature-map", args=[version.study_id])
        links["feature_map"] = request.build_absolute_uri(url)
    return {
        "id": version.pk,
        "study": {"id": version.study_id, "name": version.study.name},
        "method": version.method,
        "label": version.label,
        "parameters": version.parameters,
        "dimension": version.dimension,
        "embedding_space": {
            "name": space.name,
            "kind": space.kind,
            "sha256": space.sha256,
            "dimension": space.dimension,
            "item_count": space.item_count,
        },
        "judgment_watermark": version.judgment_watermark,
        "group_watermark": version.group_watermark,
        "counts": version.counts,
        "status": version.status,
        "is_published": version.is_published,
        "published_at": version.published_at.isoformat() if version.published_at else None,
        "created_at": version.created_at.isoformat(),
        "fit_seconds": version.fit_seconds,
        "parent": version.parent_id,
        "sigma_sha256": version.sigma_sha256 or None,
        "validity": validity_of(version),
        # Record studies: each field's share of the metric (learning/evaluation/fields.py).
        "fields": fields_json(version_fields(version)),
        # A cohort's metric (learning/cohorts/): the attribute, the value (or "equal") and the
        # cohorts' make-up (members and answers per value); null for the study's own fits.
        "cohort": (version.parameters or {}).get("cohort") if version.cohort else None,
        "links": links,
    }


def sigma_response(request, version: MetricVersion, fmt: str) -> HttpResponse:
    if fmt not in SIGMA_FORMATS:
        raise NotFound(f"Unknown format {fmt!r}; use npy, json or csv.")
    if version.status != MetricVersion.Status.READY or not version.sigma:
        raise NotFound(f"Version {version.pk} has no Sigma to download (status {version.status}).")
    etag = f'"{version.sigma_sha256}"'
    headers = {
        "ETag": etag,
        "Cache-Control": "private, no-cache",
        "X-Metric-Version": str(version.pk),
        "X-Sigma-SHA256": version.sigma_sha256,
        HEADER: validity_header(validity_of(version)),
    }
    if etag_matches(request, etag):
        return HttpResponse(status=304, headers=headers)
    audit_record(
        action=AuditAction.EXPORT_SIGMA,
        target=version,
        request=request,
        study_id=version.study_id,
        detail={"format": fmt, "method": version.method},
    )
    content_type, render = SIGMA_FORMATS[fmt]
    filename = f"sigma-{version.study_id}-{version.method}-v{version.pk}.{fmt}"
    headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return HttpResponse(render(version), content_type=content_type, headers=headers)


class ExportView(APIView):
    authentication_classes = [ApiTokenAuthentication, SessionAuthentication, TokenAuthentication]
    permission_classes = [StudyAccess]  # routes with a study_id: the study is self.study
    study_action = Action.REVIEW
    study_refused = EXPORT_REFUSED
    study: Study

    def version(self, version_id: int) -> MetricVersion:
        version = get_object_or_404(
            MetricVersion.objects.select_related("study", "study__space"), pk=version_id
        )
        require(self.request.user, version.study, Action.REVIEW, EXPORT_REFUSED)
        return version

    def published(self, method: str) -> MetricVersion:
        study = self.study
        if method not in MetricVersion.Method.values:
            raise NotFound(f"Unknown method {method!r}; use face or explore.")
        version = version_published(study_id=study.pk, method=method)
        if version is None:
            raise NotFound(f"No published {method} metric in study {study.pk} yet.")
        return version


class VersionDetail(ExportView):
    @extend_schema(summary="A metric version's metadata", responses=VersionMetadataSerializer)
    def get(self, request, version_id: int):
        return Response(version_metadata(self.version(version_id), request))


class VersionSigma(ExportView):
    @extend_schema(summary="A metric version's Sigma (npy, json or csv)", responses=bytes)
    def get(self, request, version_id: int, fmt: str):
        return sigma_response(request, self.version(version_id), fmt)


class VersionPublish(ExportView):
    @extend_schema(
        summary="Publish a metric version (admins of its study)",
        description="A version whose validity verdict is not `informative` is published only "
        'with a `reason` (JSON `{"reason": "…"}`), recorded with it (`validity.override`) and in '
        "the audit log; without one the answer is 409 with the verdict.",
        request=PublishRequestSerializer,
        responses={
            200: VersionMetadataSerializer,
            409: OpenApiResponse(PublishRefusedSerializer, description="Not informative."),
        },
    )
    def post(self, request, version_id: int):
        version = get_object_or_404(
            MetricVersion.objects.select_related("study", "study__space"), pk=version_id
        )
        require(request.user, version.study, Action.MANAGE, PUBLISH_REFUSED)
        body = request.data
        if not hasattr(body, "keys"):
            raise InvalidInput('The body must be a JSON object: {"reason": "…"} or nothing.')
        unknown = sorted(set(body.keys()) - {"reason"})
        if unknown:
            raise InvalidInput(f"Unknown field(s): {', '.join(unknown)}; the only one is reason.")
        try:
            version = metric_version_publish(
                version=version, user=request.user, reason=body.get("reason")
            )
        except NotInformative as refusal:
            return Response({"detail": refusal.message, "validity": refusal.validity}, status=409)
        return Response(version_metadata(version, request))


class PublishedDetail(ExportView):
    @extend_schema(
        summary="The published metric version of a study and method",
        responses=VersionMetadataSerializer,
    )
    def get(self, request, study_id: int, method: str):
        return Response(version_metadata(self.published(method), request))


class PublishedSigma(ExportView):
    @extend_schema(summary="The published Sigma of a study and method", responses=bytes)
    def get(self, request, study_id: int, method: str, fmt: str):
        return sigma_response(request, self.published(method), fmt)


def _table_response(rows, fields, fmt: str, filename: str) -> StreamingHttpResponse:
    if fmt not in TABLE_FORMATS:
        raise NotFound(f"Unknown format {fmt!r}; use csv, jsonl or parquet.")
    if fmt == "csv":
        stream = formats.stream_csv(rows, fields)
    elif fmt == "parquet":
        stream = formats.stream_parquet(rows, fields)
    else:
        stream = formats.stream_jsonl(rows)
    response = StreamingHttpResponse(stream, content_type=TABLE_FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    response["Cache-Control"] = "private, no-store"
    return response


def _audited_export(request, study, rows, fields, fmt: str, name: str, action: str):
    response = _table_response(rows, fields, fmt, f"{name}-{study.pk}")
    audit_record(
        action=action, target=study, request=request, study_id=study.pk, detail={"format": fmt}
    )
    return response


class JudgmentExport(ExportView):
    @extend_schema(
        summary="All judgments of a study, then its adjudications (csv, jsonl or parquet, streamed)",
        responses=bytes,
    )
    def get(self, request, study_id: int, fmt: str):
        rows = itertools.chain(
            formats.judgment_rows(study=self.study), formats.adjudication_rows(study=self.study)
        )
        return _audited_export(
            request,
            self.study,
            rows,
            formats.JUDGMENT_FIELDS,
            fmt,
            "judgments",
            AuditAction.EXPORT_JUDGMENTS,
        )


class GroupExport(ExportView):
    @extend_schema(
        summary="All comparable groups of a study (csv, jsonl or parquet, streamed)",
        responses=bytes,
    )
    def get(self, request, study_id: int, fmt: str):
        if fmt in ("csv", "parquet"):  # flat: one row per (group, member)
            rows = formats.group_member_rows(study=self.study)
        else:
            rows = formats.group_rows(study=self.study)
        return _audited_export(
            request,
            self.study,
            rows,
            formats.GROUP_FIELDS,
            fmt,
            "groups",
            AuditAction.EXPORT_GROUPS,
        )


class FeatureMap(ExportView):
    @extend_schema(
        summary="The feature map φ of a study's record space (plain JSON; apply_feature_map)",
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, study_id: int):
        space = self.study.space
        if not space.feature_map:
            raise NotFound(
                f"Space {space.name!r} is a {space.kind} space; only record spaces have a feature map."
            )
        body = feature_map_json(space.feature_map)
        etag = f'"{hashlib.sha256(body).hexdigest()}"'
        headers = {"ETag": etag, "Cache-Control": "private, no-cache"}
        if etag_matches(request, etag):
            return HttpResponse(status=304, headers=headers)
        headers["Content-Disposition"] = f'attachment; filename="feature-map-{study_id}.json"'
        return HttpResponse(body, content_type="application/json", headers=headers)
