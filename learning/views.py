"""Pages: study, WEAT and drift dashboards, metric versions (publish, compare), API tokens.

Each view: the access check (``annotation.access``), one read from :mod:`learning.reports` or
the dashboard cache (or one service call), render.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from annotation.access import Action, may, may_export, require, study_get
from annotation.models import Study
from common.errors import Conflict, NotAllowed

from . import curves, dashboard_refresh, reports, services, sigmas, spectra, tokens
from .models import ApiToken, MetricVersion, WeatTest

NEW_TOKEN_SESSION_KEY = "fairmetric:new-token"


@login_required
@require_http_methods(["GET", "POST"])
def account_tokens(request: HttpRequest) -> HttpResponse:
    """List the user's tokens; POST creates one and redirects (POST–redirect–GET: a reload
    makes no second token). The plaintext rides in the session to the next GET, which shows it
    once. Only people who may export (``annotation.access.may_export``) may create tokens;
    everybody may list and revoke their own."""
    allowed = may_export(request.user)
    context: dict = {"may_create": allowed}
    status = 200
    if request.method == "POST":
        if not allowed:
            raise NotAllowed(
                "You review or administer no study, so a token could download nothing."
            )
        try:
            token, key = tokens.api_token_create(user=request.user, name=request.POST.get("name"))
        except tokens.TokenError as error:
            context["error"] = str(error)
            status = 400
        else:
            request.session[NEW_TOKEN_SESSION_KEY] = {"id": token.pk, "key": key}
            return redirect("account-tokens")
    new = request.session.pop(NEW_TOKEN_SESSION_KEY, None)
    if new:
        token = ApiToken.objects.filter(user=request.user, pk=new.get("id")).first()
        if token is not None:
            context.update(new_token=token, new_key=new.get("key"))
    context["tokens"] = ApiToken.objects.filter(user=request.user)
    response = render(request, "learning/tokens.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the page may show a plaintext token
    return response


@login_required
@require_POST
def account_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        tokens.api_token_revoke(user=request.user, token_id=token_id)
    except tokens.TokenError as error:
        return render(
            request,
            "learning/tokens.html",
            {
                "error": str(error),
                "tokens": ApiToken.objects.filter(user=request.user),
                "may_create": may_export(request.user),
            },
            status=404,
        )
    return redirect("account-tokens")


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
        raise Http404("Give the versions to compare as ?a=<id>&b=<id>.") from None
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
    state = dashboard_refresh.dashboard_state(study)
    context = _study_nav(study, "dashboard") | {
        "state": state,
        "board": state.board,
        "refit_status": reports.refit_status(study),
    }
    if state.board is None:
        return render(request, "learning/study_dashboard_computing.html", context)
    board = state.board
    reliability = reports.annotator_reliability(study)
    context["annotator_rows"] = [(q, reliability.get(q.user_id)) for q in board.annotators]
    context["reliability_version"] = next(iter(reliability.values()), None)
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
    state = dashboard_refresh.dashboard_state(study)
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
    show_all = request.GET.get("all") == "1"
    table = reports.weat_table(study, show_all=show_all)
    context = _study_nav(study, "weat") | {
        "table": table,
        "show_all": show_all,
        "significance": reports.SIGNIFICANCE,
    }
    return render(request, "learning/weat.html", context)


@login_required
@require_safe
def study_weat_test(request: HttpRequest, study_id: int, test_id: int) -> HttpResponse:
    study = _reviewer_study(request, study_id)
    test = get_object_or_404(WeatTest.objects.filter(suite__studies=study).distinct(), pk=test_id)
    show_all = request.GET.get("all") == "1"
    versions, hidden = reports.table_versions(study, show_all=show_all)
    found = reports.weat_results(study, [test], versions)
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
        "significance": reports.SIGNIFICANCE,
    }
    return render(request, "learning/weat_test.html", context)


@login_required
@require_safe
def study_drift(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _reviewer_study(request, study_id)
    data = reports.drift_series(study)
    context = _study_nav(study, "drift") | {
        "chart": {"series": data.series, "threshold": reports.drift_threshold(study)},
        "alerts": reports.drift_alerts(study, data),
        "methods": sorted(data.series),
        "latest": data.latest,
        "latest_rows": [(v, data.last_drift.get(m)) for m, v in sorted(data.latest.items())],
        "refit_status": reports.refit_status(study),
    }
    return render(request, "learning/drift.html", context)


# --- Versions ---------------------------------------------------------------------------------


@login_required
@require_safe
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _reviewer_version(request, version_id)
    report = reports.version_report(version)
    context = _study_nav(version.study, "versions") | {
        "report": report,
        "version": version,
        "can_publish": may(request.user, version.study_id, Action.MANAGE),
        "chart": {"spectrum": report.spectrum},
        "diagnostics": _scalars(version.diagnostics),
        "parameters": _scalars(version.parameters or {}),
        # Ready versions to compare with, by method, the published one first, newest next.
        "others": MetricVersion.objects.ready()
        .filter(study_id=version.study_id)
        .exclude(pk=version.pk)
        .only("id", "label", "method", "is_published", "created_at")
        .order_by("method", "-is_published", "-pk")[:300],
    }
    return render(request, "learning/version.html", context)


def _scalars(values: dict, prefix: str = "") -> list[tuple[str, str]]:
    """Diagnostics as table rows: nested dicts flattened (``drift · previous · …``), long
    lists summarised (the spectrum is charted)."""
    rows = []
    for key, value in sorted(values.items()):
        name = f"{prefix}{key}".replace("_", " ")
        if isinstance(value, dict):
            rows += _scalars(value, prefix=f"{name} · ")
            continue
        if isinstance(value, list):
            value = (
                f"{len(value)} values"
                if len(value) > 8
                else ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in value)
            )
        elif isinstance(value, float):
            value = f"{value:.6g}"
        elif value is None:
            value = "—"
        rows.append((name, str(value)))
    return rows


@login_required
@require_POST
def version_publish(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _reviewer_version(request, version_id)
    try:
        services.metric_version_publish(version=version, user=request.user)
    except Conflict as error:  # not ready: said on the version page
        messages.error(request, error.message)
        return redirect("version-detail", version.pk)
    messages.success(
        request,
        f"Version #{version.pk} is now the published "
        f"{version.get_method_display()} metric of {version.study}.",
    )
    return redirect("version-detail", version.pk)


@login_required
@require_safe
def version_compare(request: HttpRequest) -> HttpResponse:
    a = _reviewer_version(request, request.GET.get("a"))
    b = _reviewer_version(request, request.GET.get("b"))
    ready = [v for v in (a, b) if v.status == MetricVersion.Status.READY and v.sigma]
    spectra_ = {
        v.pk: [float(x) for x in spectra.spectrum(sigmas.sigma_of(v)).values] for v in ready
    }
    weat = reports.weat_rows_for([a, b])
    tests = sorted(
        {r.test for rows in weat.values() for r in rows.values()},
        key=lambda t: (t.kind, t.position, t.pk),
    )
    diag_a, diag_b = dict(_scalars(a.diagnostics)), dict(_scalars(b.diagnostics))
    context = _study_nav(a.study, "versions") | {
        "a": a,
        "b": b,
        "drift": sigmas.drift_between(a, b) if len(ready) == 2 else None,
        "directions": [reports.sensitive_directions(v) if v in ready else [] for v in (a, b)],
        "weat": [(t, weat[a.pk].get(t.pk), weat[b.pk].get(t.pk)) for t in tests],
        "diagnostics": [
            (k, diag_a.get(k, "—"), diag_b.get(k, "—")) for k in sorted(set(diag_a) | set(diag_b))
        ],
        "counts": [
            (k, a.counts.get(k, "—"), b.counts.get(k, "—"))
            for k in sorted(set(a.counts) | set(b.counts))
        ],
        "chart": {
            "a": {"name": f"#{a.pk} {a.label}", "spectrum": spectra_.get(a.pk, [])},
            "b": {"name": f"#{b.pk} {b.label}", "spectrum": spectra_.get(b.pk, [])},
        },
        "significance": reports.SIGNIFICANCE,
    }
    return render(request, "learning/compare.html", context)
