"""Pages: study, WEAT and drift dashboards, metric versions (publish, compare).

Each view: the access check (``annotation.access``), one read from the room's report modules or the
dashboard cache (or one service call), render.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from annotation.access import Action, may, require, study_get
from annotation.models import Study
from common.errors import Conflict, InvalidInput
from learning.dashboards import (
    curves,
    drift_series,
    refresh,
    status,
    version_report,
    weat_table,
)
from learning.evaluation import reasons
from learning.evaluation.weat_tests import require_weat
from learning.models import MetricVersion, WeatTest
from learning.versions import storage
from learning.versions.selectors import versions_that_matter
from learning.versions.validity import INFORMATIVE, NotInformative, validity_of, verdict_line

# --- Access -----------------------------------------------------------------------------------


def _reviewer_study(request: HttpRequest, study_id: int) -> Study:
    """The study, if the user reviews or administers it (staff: every study); else 403/404."""
    return study_get(
        request.user,
        study_id,
        Action.REVIEW,
        message="Only reviewers and admins of this study can see its dashboards.",
    )


def _reviewer_version(request: HttpRequest, version_id) -> MetricVersion:
    try:
        version_id = int(version_id)
    except (TypeError, ValueError):
        raise InvalidInput(
            "Choose the versions to compare on a version's page (“Compare with”), or give "
            "them as ?a=<id>&b=<id>."
        ) from None
    version = get_object_or_404(
        MetricVersion.objects.select_related("study", "study__space", "parent", "published_by"),
        pk=version_id,
    )
    require(
        request.user,
        version.study,
        Action.REVIEW,
        "Only reviewers and admins of this study can see its metrics.",
    )
    return version


def _study_nav(study: Study, active: str) -> dict:
    return {"study": study, "active": active}


# --- Dashboards -------------------------------------------------------------------------------


@login_required
@require_safe
def study_dashboard(request: HttpRequest, study_id: int) -> HttpResponse:
    """Cached figures (fresh, or stale with a notice); a polling shell while none exist."""
    study = _reviewer_study(request, study_id)
    state = refresh.dashboard_state(study)
    context = _study_nav(study, "dashboard") | {
        "state": state,
        "board": state.board,
        "refit_status": status.refit_status(study),
    }
    if state.board is None:
        return render(request, "learning/study_dashboard_computing.html", context)
    board = state.board
    reliability = status.annotator_reliability(study)
    context["annotator_rows"] = [(q, reliability.get(q.user_id)) for q in board.annotators]
    context["reliability_version"] = next(iter(reliability.values()), None)
    context["reasons"] = reasons.reasons_view(study, getattr(board, "reasons", None))
    context["charts"] = {
        "days": board.days,
        "per_day": board.per_day,
        "per_annotator": {q.username: q.answers for q in board.annotators},
        "label_mix": board.label_mix,
        "median_seconds": {q.username: q.median_seconds for q in board.annotators},
    }
    curve, measurement = curves.study_curve(study), curves.strategy_efficiency()
    context["charts"] |= curves.chart_data(curve, measurement, study.strategy)
    context |= {
        "curve": curve,
        "measurement": measurement,
        "measurement_rows": curves.measurement_table(measurement),
        "measurement_note": curves.METHOD_NOTE,
        "measurement_command": curves.MEASUREMENT_COMMAND,
        "strategy_measured": measurement is not None and measurement.measures(study.strategy),
    }
    return render(request, "learning/study_dashboard.html", context)


@login_required
@require_safe
def study_dashboard_status(request: HttpRequest, study_id: int) -> JsonResponse:
    """JSON polled by the "computing…" page: whether figures exist, and for what data."""
    study = _reviewer_study(request, study_id)
    state = refresh.dashboard_state(study)
    board = state.board
    return JsonResponse(
        {
            "ready": board is not None,
            "fresh": state.fresh,
            "answers": state.answers,
            "computed_at": board.computed_at_datetime.isoformat() if board else None,
        }
    )


@login_required
@require_safe
def study_weat(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _reviewer_study(request, study_id)
    require_weat(study)
    show_all = request.GET.get("all") == "1"
    table = weat_table.weat_table(study, show_all=show_all)
    context = _study_nav(study, "weat") | {
        "table": table,
        "show_all": show_all,
        "significance": weat_table.SIGNIFICANCE,
        "can_manage": may(request.user, study, Action.MANAGE),
    }
    return render(request, "learning/weat.html", context)


@login_required
@require_safe
def study_weat_test(request: HttpRequest, study_id: int, test_id: int) -> HttpResponse:
    study = _reviewer_study(request, study_id)
    require_weat(study)
    test = get_object_or_404(
        WeatTest.objects.filter(suite__studies=study).select_related("suite").distinct(),
        pk=test_id,
    )
    show_all = request.GET.get("all") == "1"
    versions, hidden = weat_table.table_versions(study, show_all=show_all)
    found = weat_table.weat_results(study, [test], versions)
    columns = [("Euclidean", None)] + [(v.label or v.method, v) for v in versions]
    results = [(name, found.get((test.pk, v.pk if v else None))) for name, v in columns]
    words = list(test.x_words + test.y_words)
    chart = {
        "words": words,
        "x_words": test.x_words,
        "series": [
            {"name": name, "scores": [r.scores.get(w) for w in words]}
            for name, r in results
            if r is not None
        ],
    }
    context = _study_nav(study, "weat") | {
        "test": test,
        "results": results,
        "chart": chart,
        "hidden": hidden,
        "significance": weat_table.SIGNIFICANCE,
        "can_edit": test.suite.owner_study_id == study.pk
        and may(request.user, study, Action.MANAGE),
    }
    return render(request, "learning/weat_test.html", context)


@login_required
@require_safe
def study_drift(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _reviewer_study(request, study_id)
    data = drift_series.drift_series(study)
    context = _study_nav(study, "drift") | {
        "chart": {"series": data.series},
        "alerts": drift_series.drift_alerts(study, data),
        "methods": sorted(data.series),
        "latest": data.latest,
        "latest_rows": [(v, data.last_drift.get(m)) for m, v in sorted(data.latest.items())],
        "refit_status": status.refit_status(study),
    }
    return render(request, "learning/drift.html", context)


# --- Versions ---------------------------------------------------------------------------------


def _version_page(
    request: HttpRequest, version: MetricVersion, *, status: int = 200, publish_error: str = ""
) -> HttpResponse:
    every = request.GET.get("versions") == "all"
    report = version_report.version_report(version)
    validity = validity_of(version)
    context = _study_nav(version.study, "versions") | {
        "report": report,
        "version": version,
        "validity": validity,
        "validity_line": verdict_line(validity),
        "needs_reason": validity["verdict"] != INFORMATIVE,
        "publish_error": publish_error,
        "reason": request.POST.get("reason", "") if request.method == "POST" else "",
        "can_publish": may(request.user, version.study_id, Action.MANAGE),
        "chart": {"spectrum": report.spectrum},
        "diagnostics": version_report.scalar_rows(version.diagnostics),
        "parameters": version_report.scalar_rows(version.parameters or {}),
        # Versions to compare with, by method: published, current, latest and the previous
        # one (every ready version behind the "all versions" link).
        "others": [
            v
            for v in versions_that_matter(
                study_id=version.study_id, also=[version.parent_id], every=every
            )
            if v.pk != version.pk
        ],
        "every_version": every,
        "ready_count": MetricVersion.objects.ready().filter(study_id=version.study_id).count(),
    }
    return render(request, "learning/version.html", context, status=status)


@login_required
@require_safe
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    return _version_page(request, _reviewer_version(request, version_id))


@login_required
@require_POST
def version_publish(request: HttpRequest, version_id: int) -> HttpResponse:
    """Publish; a version that is not informative needs the form's reason (else the page again,
    400, with the form's error)."""
    version = _reviewer_version(request, version_id)
    try:
        storage.metric_version_publish(
            version=version, user=request.user, reason=request.POST.get("reason", "")
        )
    except (NotInformative, InvalidInput) as error:
        return _version_page(request, version, status=400, publish_error=error.message)
    except Conflict as error:  # not ready: said on the version page
        messages.error(request, error.message)
        return redirect("learning:version-detail", version.pk)
    messages.success(
        request,
        f"Version #{version.pk} is now the published "
        f"{version.get_method_display()} metric of {version.study}.",
    )
    return redirect("learning:version-detail", version.pk)


@login_required
@require_safe
def version_compare(request: HttpRequest) -> HttpResponse:
    a = _reviewer_version(request, request.GET.get("a"))
    b = _reviewer_version(request, request.GET.get("b"))
    compared = version_report.version_comparison(a, b)
    context = _study_nav(a.study, "versions") | {
        "a": a,
        "b": b,
        "drift": compared.drift,
        "directions": compared.directions,
        "weat": compared.weat,
        "diagnostics": compared.diagnostics,
        "counts": compared.counts,
        "fields_a": compared.fields[0],
        "fields_b": compared.fields[1],
        "fields_moved": compared.fields_moved,
        "field_rows": compared.field_rows,
        "chart": {
            "a": {"name": f"#{a.pk} {a.label}", "spectrum": compared.spectra[0]},
            "b": {"name": f"#{b.pk} {b.label}", "spectrum": compared.spectra[1]},
        },
        "significance": weat_table.SIGNIFICANCE,
    }
    return render(request, "learning/compare.html", context)
