"""The audit API, for a downstream CI job (reviewers and admins of the study; tokens or session):

* ``POST /api/studies/{id}/audits/`` — multipart: ``predictions`` (CSV or Parquet with ``key``,
  ``score``, optional ``decision``), optional ``version``, ``k``, ``epsilon``, ``lipschitz``,
  ``name`` → 201 ``{"id", "status", …}`` at once (the status as stored: ``queued``; the file's
  head is checked here, every row by the worker), 400/413 for a bad or too big file, 429 with
  ``Retry-After`` when the user or the study has too many audits in flight;
  ``GET`` lists the study's audits, newest first;
* ``GET /api/studies/{id}/audits/{aid}/`` — status (queued, running, done, failed), progress,
  and when done the figures (``violation_rate``, … with their intervals; ``summary`` has all);
* ``GET /api/studies/{id}/audits/{aid}/violations.csv`` — the stored violations, worst first;
* ``GET /api/studies/{id}/counterfactuals.csv?columns=sex,race`` — the pool's counterfactual twins
  (``learning.audits.twins``), to score and upload with the originals' scores; the detail then
  has ``counterfactual``: per column ``pairs``, ``moved_share``, ``mean_abs_change``,
  ``max_abs_change``, ``decision_flips``, their ``intervals`` and the ``worst`` twins.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from learning.audits import selectors, serializers, services, twins
from learning.exports.api import ExportView
from learning.exports.formats import stream_csv
from learning.models import AuditViolation, ModelAudit
from learning.versions.validity import validity_of

FIGURES = ("violation_rate", "mean_gap", "worst_gap", "consistency", "decision_flip")
CSV_FIELDS = [
    "rank",
    "key_a",
    "key_b",
    "distance",
    "score_a",
    "score_b",
    "gap",
    "needed_L",
    "euclidean",
    "decision_a",
    "decision_b",
    "differing_fields",
    "top_field",
    "top_share",
    "asked",
    "comparable_answers",
    "incomparable_answers",
    "verdict",
]
CSV_CHUNK = 2000


def audit_data(audit: ModelAudit, request) -> dict:
    """The API's view of an audit (the page's status poll reads the same)."""
    version = audit.version
    summary = audit.summary or {}
    sigma = summary.get("sigma") or {}
    links = {
        "self": request.build_absolute_uri(reverse("api-audit", args=[audit.study_id, audit.pk])),
        "page": request.build_absolute_uri(
            reverse("learning:audit-detail", args=[audit.study_id, audit.pk])
        ),
    }
    if audit.status == ModelAudit.Status.DONE:
        links["violations_csv"] = request.build_absolute_uri(
            reverse("api-audit-violations", args=[audit.study_id, audit.pk])
        )
    data = {
        "id": audit.pk,
        "name": audit.name,
        "status": audit.status,
        "stage": audit.stage,
        "progress": audit.progress,
        "error": audit.error,
        "study": audit.study_id,
        "version": {
            "id": version.pk,
            "label": version.label or version.method,
            "method": version.method,
            "is_published": version.is_published,
            "validity": validity_of(version),
        },
        "k": audit.k,
        "epsilon": summary.get("epsilon", audit.epsilon),
        "lipschitz": summary.get("lipschitz", audit.lipschitz),
        "items": audit.item_count,
        "new_records": audit.new_records,
        "has_decision": audit.has_decision,
        "violations": audit.violation_count,
        "created_at": audit.created_at.isoformat(),
        "finished_at": audit.finished_at.isoformat() if audit.finished_at else None,
        "seconds": audit.seconds,
        "delta": audit.delta if audit.delta is not None else twins.DEFAULT_DELTA,
        "counterfactual": {
            column: {k: v for k, v in figures.items() if k != "worst"}
            for column, figures in (summary.get("counterfactual") or {}).items()
        },
    }
    for name in FIGURES:
        figure = sigma.get(name)
        data[name] = figure.get("estimate") if figure else None
        data[f"{name}_interval"] = [figure.get("low"), figure.get("high")] if figure else None
    data["metric_uncertainty"] = metric_uncertainty(audit)
    data["summary"] = summary
    data["links"] = links
    return data


def metric_uncertainty(audit: ModelAudit) -> dict:
    """The audit under bootstrap refits of Σ (``learning/audits/uncertainty.py``): ``status``
    (running, done, unavailable, failed; empty for an audit from before), ``refits``, and per
    headline figure its range across plausible metrics (``low``, ``high``: 2.5–97.5 %; ``min``,
    ``max``) beside the audit's estimate and its interval across items."""
    state = dict(audit.uncertainty or {})
    figures = state.pop("figures", {})
    return state | figures


class AuditView(ExportView):
    study_refused = services.AUDIT_REFUSED


class AuditList(AuditView):
    parser_classes = [MultiPartParser]

    @extend_schema(
        summary="The study's model audits, newest first",
        responses=serializers.AuditSerializer(many=True),
    )
    def get(self, request, study_id: int):
        audits = selectors.study_audits(study=self.study)[:200]
        return Response([audit_data(a, request) for a in audits])

    @extend_schema(
        summary="Audit a model's scores under a metric version (runs in the worker)",
        request={"multipart/form-data": serializers.AuditCreateSerializer},
        responses={201: serializers.AuditSerializer},
    )
    def post(self, request, study_id: int):
        audit = services.audit_create(
            user=request.user,
            study=self.study,
            upload=request.FILES.get("predictions"),
            version_id=request.data.get("version"),
            k=request.data.get("k"),
            epsilon=request.data.get("epsilon"),
            lipschitz=request.data.get("lipschitz"),
            name=request.data.get("name", ""),
            delta=request.data.get("delta"),
        )
        return Response(audit_data(audit, request), status=201)


class AuditDetail(AuditView):
    @extend_schema(
        summary="A model audit: status and progress; when done, its figures",
        responses=serializers.AuditSerializer,
    )
    def get(self, request, study_id: int, audit_id: int):
        audit = selectors.audit_get(study=self.study, audit_id=audit_id)
        return Response(audit_data(audit, request))


def violation_rows(audit: ModelAudit, ids: list[int]) -> object:
    """CSV rows of the violations ``ids`` (in that order), answers included, read in chunks
    (constant memory)."""
    for start in range(0, len(ids), CSV_CHUNK):
        part = ids[start : start + CSV_CHUNK]
        found = AuditViolation.objects.in_bulk(part)
        chunk = [found[pk] for pk in part]
        answers = selectors.answers_for(study_id=audit.study_id, violations=chunk)
        for v in chunk:
            top = max(v.shares.items(), key=lambda kv: kv[1], default=("", None))
            found = answers.get(v.pk)
            yield {
                "rank": v.rank,
                "key_a": v.key_a,
                "key_b": v.key_b,
                "distance": v.distance,
                "score_a": v.score_a,
                "score_b": v.score_b,
                "gap": v.gap,
                "needed_L": v.needed,
                "euclidean": v.euclidean,
                "decision_a": v.decision_a,
                "decision_b": v.decision_b,
                "differing_fields": " ".join(v.differing_fields),
                "top_field": top[0],
                "top_share": top[1],
                "asked": "yes" if v.asked_at else "",
                "comparable_answers": found.counts["comparable"] if found else 0,
                "incomparable_answers": found.counts["incomparable"] if found else 0,
                "verdict": found.verdict if found else "",
            }


class AuditViolations(AuditView):
    @extend_schema(
        summary="An audit's violations, worst first (CSV; filters as on the page)",
        parameters=[
            OpenApiParameter("field", str, description="a record field; with value"),
            OpenApiParameter("value", str, description="pairs where either side has it"),
            OpenApiParameter("differs", str, description="pairs that differ in this field"),
            OpenApiParameter("asked", str, enum=["asked", "not-asked"]),
            OpenApiParameter("order", str, enum=["gap"], description="largest gap first"),
        ],
        responses={(200, "text/csv"): bytes},
    )
    def get(self, request, study_id: int, audit_id: int):
        audit = selectors.audit_get(study=self.study, audit_id=audit_id)
        if audit.status != ModelAudit.Status.DONE:
            return Response(
                {"detail": f"The audit is {audit.status}; its violations come when it is done."},
                status=409,
            )
        filters = selectors.filters_from(request.query_params, selectors.record_fields(audit))
        rows = selectors.violations_filtered(audit=audit, filters=filters)
        # The filter's query runs here, before the response starts: a failure is an error
        # answer, never a 200 cut short after its header.
        ids = list(rows.values_list("id", flat=True))
        stream = stream_csv(violation_rows(audit, ids), CSV_FIELDS)
        response = StreamingHttpResponse(stream, content_type="text/csv; charset=utf-8")
        name = f"audit-{audit.study_id}-{audit.pk}-violations.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["Cache-Control"] = "private, no-store"
        return response


class Counterfactuals(AuditView):
    @extend_schema(
        summary="The pool's counterfactual twins: each record with one sensitive column changed",
        parameters=[
            OpenApiParameter(
                "columns",
                str,
                description="comma-separated record fields (empty: the declared sensitive ones)",
            )
        ],
        responses={(200, "text/csv"): bytes},
    )
    def get(self, request, study_id: int):
        plan = twins.counterfactual_plan(
            study=self.study, columns=request.query_params.get("columns")
        )
        rows = twins.counterfactual_rows(study=self.study, plan=plan)
        stream = stream_csv(rows, plan.header)
        response = StreamingHttpResponse(stream, content_type="text/csv; charset=utf-8")
        name = f"study-{self.study.pk}-counterfactuals.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["Cache-Control"] = "private, no-store"
        return response
