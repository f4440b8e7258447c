"""The cohort page (``studies/<id>/cohorts/``, the study's admins): per member attribute, each
cohort's metric and the equal-cohort one (links to their version pages, where they are
published and downloaded like any version), the test, the fields, the cross-prediction table,
the pairs the cohorts disagree on (sent back to the annotators from here); and
``GET /api/studies/{id}/cohorts/``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import Action, StudyAccess, study_get
from common.errors import AppError
from learning.cohorts import selectors


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def study_cohorts(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_get(request.user, study_id, Action.MANAGE, message=selectors.REFUSED)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "ask":
                done = selectors.cohort_pairs_ask(
                    user=request.user, study=study, attribute=request.POST.get("attribute", "")
                )
                messages.success(
                    request, f"{done.get('pairs', 0)} pairs sent back to the annotators."
                )
            else:
                sent = selectors.cohorts_request(user=request.user, study=study)
                messages.success(
                    request,
                    "The cohorts are being fitted; this page shows them when done."
                    if sent
                    else "Could not queue the fits now; the next refit does.",
                )
        except AppError as error:
            messages.error(request, error.message)
        return redirect("learning:study-cohorts", study.pk)
    context = {
        "study": study,
        "active": "cohorts",
        "attributes": selectors.cohorts_of(study),
    }
    return render(request, "learning/cohorts.html", context)


class CohortList(APIView):
    """``GET /api/studies/{id}/cohorts/``: the study's member attributes, each value's members,
    answers and version, whether the cohorts differ (p-value, the fields), the cross-prediction
    table and the pairs they disagree on. The study's admins only."""

    permission_classes = [StudyAccess]
    study_action = Action.MANAGE
    study_refused = selectors.REFUSED

    @extend_schema(responses=dict)
    def get(self, request, study_id: int):
        return Response(selectors.api_shape(selectors.cohorts_of(self.study)))
