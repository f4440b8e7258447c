"""Pages of the audit room: a study's audits and the upload form, one audit (summary, the worst
violations with filters, "ask the annotators"), and two audits side by side.

Reviewers and admins of the study (and staff) see them; only admins may ask the annotators.
Each view: access check, form or filters, one service or selector call, render.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotation.access import Action, may, study_get
from common.errors import InvalidInput, PayloadTooLarge, TooBusy
from learning.audits import report, selectors, services, twins
from learning.models import MetricVersion, ModelAudit
from learning.versions.selectors import versions_that_matter
from learning.versions.validity import validity_of, verdict_line


class AuditForm(forms.Form):
    predictions = forms.FileField(
        label="Scores (CSV or Parquet: key, score, optional decision)",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.parquet,.pq,.tsv,.txt"}),
    )
    name = forms.CharField(required=False, max_length=200, label="Name (e.g. the model)")
    version = forms.ModelChoiceField(
        queryset=MetricVersion.objects.none(),
        required=False,
        empty_label="the published version (default)",
        label="Metric version",
    )
    k = forms.IntegerField(required=False, min_value=1, initial=10, label="Neighbours k")
    epsilon = forms.FloatField(required=False, label="ε (empty: from the metric)")
    lipschitz = forms.FloatField(required=False, label="L (empty: 1)")
    delta = forms.FloatField(
        required=False, min_value=0, label="δ for counterfactual twins (empty: 0.01)"
    )

    def __init__(self, *args, study, every: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["version"]
        field.queryset = MetricVersion.objects.ready().filter(study=study)  # what may be posted
        tags = {}
        if not self.is_bound:  # the menu: published, current, latest (or every version)
            shown = versions_that_matter(study_id=study.pk, every=every)
            tags = {v.pk: v.menu_tags for v in shown}
            field.queryset = field.queryset.filter(pk__in=list(tags))
        field.label_from_instance = lambda v: (
            f"#{v.pk} {v.label or v.method}"
            + "".join(f" · {t}" for t in tags.get(v.pk, ["published"] * v.is_published))
        )


def _study(request: HttpRequest, study_id: int):
    return study_get(request.user, study_id, Action.REVIEW, message=services.AUDIT_REFUSED)


def _nav(study, active: str = "audits") -> dict:
    return {"study": study, "active": active}


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def audit_list(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    every = request.GET.get("versions") == "all"
    form = AuditForm(request.POST or None, request.FILES or None, study=study, every=every)
    refused = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            audit = services.audit_create(
                user=request.user,
                study=study,
                upload=data["predictions"],
                version_id=data["version"].pk if data["version"] else None,
                k=data["k"],
                epsilon=data["epsilon"],
                lipschitz=data["lipschitz"],
                name=data["name"],
                delta=data["delta"],
            )
        except (InvalidInput, PayloadTooLarge, TooBusy) as exc:
            form.add_error(None, exc.message)
            refused = exc
        else:
            messages.success(request, f"Audit {audit.name!r} queued: the worker runs it.")
            return redirect("learning:audit-detail", study.pk, audit.pk)
    status = 400 if request.method == "POST" else 200
    response = _list(request, study, form, status=status)
    if isinstance(refused, TooBusy):
        response.status_code = refused.status_code
        response["Retry-After"] = str(refused.retry_after)
    return response


def _list(request, study, form, *, status: int = 200, columns_error: str = "") -> HttpResponse:
    context = _nav(study) | {
        "form": form,
        "audits": list(selectors.study_audits(study=study)[:100]),
        "record_columns": twins.record_columns(study),
        "sensitive": twins.sensitive_columns(study),
        "may_declare": may(request.user, study, Action.MANAGE),
        "columns_error": columns_error,
        "every_version": request.GET.get("versions") == "all",
    }
    return render(request, "learning/audits/list.html", context, status=status)


@login_required
@require_POST
def audit_sensitive(request: HttpRequest, study_id: int) -> HttpResponse:
    """An admin declares the study's sensitive columns (the counterfactual twins' columns)."""
    study = _study(request, study_id)
    try:
        columns = twins.sensitive_columns_set(
            user=request.user, study=study, columns=request.POST.getlist("column")
        )
    except InvalidInput as exc:
        return _list(request, study, AuditForm(study=study), status=400, columns_error=exc.message)
    named = ", ".join(columns) or "none"
    messages.success(request, f"Sensitive columns: {named}.")
    return redirect("learning:audits", study.pk)


def _detail(request, study, audit, *, error: str = "", status: int = 200) -> HttpResponse:
    """The audit page; ``error`` (bad filters, a refused "ask") is shown with status 400."""
    fields = selectors.record_fields(audit)
    try:
        filters = selectors.filters_from(request.GET, fields)
    except InvalidInput as exc:
        filters, error, status = selectors.Filters(), exc.message, 400
    page = None
    pairs: list[report.PairView] = []
    if audit.status == ModelAudit.Status.DONE:
        rows = selectors.violations_filtered(audit=audit, filters=filters)
        page = Paginator(rows, selectors.PAGE_SIZE).get_page(request.GET.get("page"))
        shown = list(page.object_list)
        answers = selectors.answers_for(study_id=study.pk, violations=shown)
        pairs = [report.pair_view(v, answers.get(v.pk)) for v in shown]
    query = request.GET.copy()
    query.pop("page", None)
    done = audit.status == ModelAudit.Status.DONE
    context = _nav(study) | {
        "audit": audit,
        "version_validity": verdict_line(validity_of(audit.version)),
        "version_override": validity_of(audit.version)["override"],
        "summary": audit.summary,
        "figures": report.summary_rows(audit),
        "twin_rows": report.twin_rows(audit),
        "curve_chart": report.curve_chart([audit]),
        "all_pairs": report.all_pairs_rows(audit),
        "uncertainty": audit.uncertainty or {},
        "uncertainty_rows": report.uncertainty_rows(audit),
        "sensitive": twins.sensitive_columns(study),
        "fields": fields,
        "filters": filters,
        "page": page,
        "pairs": pairs,
        "query": query.urlencode() if status == 200 else "",
        "error": error,
        "loop": selectors.audit_loop(audit=audit) if done else None,
        "may_ask": may(request.user, study, Action.MANAGE),
        "others": selectors.study_audits(study=study)
        .exclude(pk=audit.pk)
        .filter(status="done")[:20],
    }
    return render(request, "learning/audits/detail.html", context, status=status)


@login_required
@require_safe
def audit_detail(request: HttpRequest, study_id: int, audit_id: int) -> HttpResponse:
    study = _study(request, study_id)
    return _detail(request, study, selectors.audit_get(study=study, audit_id=audit_id))


@login_required
@require_POST
def audit_ask(request: HttpRequest, study_id: int, audit_id: int) -> HttpResponse:
    study = _study(request, study_id)
    audit = selectors.audit_get(study=study, audit_id=audit_id)
    try:
        result = services.audit_ask_annotators(
            user=request.user, audit=audit, violation_ids=request.POST.getlist("violation")
        )
    except InvalidInput as exc:
        return _detail(request, study, audit, error=exc.message, status=400)
    messages.success(
        request,
        f"Asked the annotators about {result['rows']} pair(s): {result['added']} new candidate "
        f"pair(s) for the study ({result['total']} in all), offered before the sampler's own.",
    )
    return redirect("learning:audit-detail", study.pk, audit.pk)


def _audit_param(request, study, name: str) -> ModelAudit:
    try:
        audit_id = int(request.GET.get(name, ""))
    except ValueError:
        raise Http404("Give the audits to compare as ?a=<id>&b=<id>.") from None
    return selectors.audit_get(study=study, audit_id=audit_id)


@login_required
@require_safe
def audit_compare(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    first, second = _audit_param(request, study, "a"), _audit_param(request, study, "b")
    context = _nav(study) | {
        "a": first,
        "b": second,
        "rows": report.compare_rows(first, second),
        "overlap": selectors.audit_overlap(first, second),
        "worst_a": list(first.violations.order_by("rank")[:10]),
        "worst_b": list(second.violations.order_by("rank")[:10]),
        "curve_chart": report.curve_chart([first, second]),
        "twins": report.compare_twins(first, second),
    }
    return render(request, "learning/audits/compare.html", context)
