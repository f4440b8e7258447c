"""Server-rendered pages: studies, the pair labelling page, group curation and the annotator's
completion page (the set-up pages: ``annotation/setup/views.py``; review and adjudication:
``annotation/review/views.py``)."""

from __future__ import annotations

import markdown
import nh3
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from common.errors import NotFound

from . import selectors
from .access import SEES_ALL, Action, study_get, study_role
from .models import Membership, Study
from .models.cohorts import attributes_to_ask


def render_instructions(text: str) -> str:
    """Study instructions: Markdown rendered to HTML, then sanitised with nh3."""
    return nh3.clean(markdown.markdown(text or "", extensions=["extra", "sane_lists"]))


def _study(
    request: HttpRequest, study_id: int, action: Action, message: str | None = None
) -> tuple[Study, str]:
    """The study and the user's role, if the role allows ``action`` (``annotation.access``)."""
    study = study_get(request.user, study_id, action, message=message)
    return study, study_role(request.user, study)  # checked just above, memoised


@login_required
@require_safe
def study_list(request: HttpRequest) -> HttpResponse:
    studies = selectors.studies_for_user(user=request.user)
    archived = selectors.studies_archived(user=request.user)
    return render(request, "annotation/study_list.html", {"studies": studies, "archived": archived})


@login_required
@require_safe
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    study, role = _study(request, study_id, Action.VIEW)
    context = {
        "study": study,
        "role": role,
        "sees_all": role in SEES_ALL,
        "progress": selectors.progress_for(study=study, user=request.user),
        "instructions_html": render_instructions(study.instructions),
        "pairs_mode": study.mode != Study.Mode.GROUPS,
        "groups_mode": study.mode != Study.Mode.PAIRS,
        "can_manage": selectors.may_manage(user=request.user, study=study),
    }
    return render(request, "annotation/study_detail.html", context)


def _work_page(request, study_id: int, *, unless: str, template: str, refusal: str):
    """The labelling and curation pages: members only, and only in a study of that mode."""
    study, role = _study(request, study_id, Action.VIEW)
    if study.mode == unless:
        raise NotFound(refusal)
    context = {
        "study": study,
        "role": role,
        "progress": selectors.progress_for(study=study, user=request.user),
        "instructions_html": render_instructions(study.instructions),
    }
    return render(request, template, context)


@login_required
@require_safe
def label_pairs(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_get(request.user, study_id, Action.VIEW)
    if study.stop_at_target and selectors.progress_for(study=study, user=request.user).complete:
        return redirect("annotation:study-done", study.pk)
    if _to_ask(request, study):  # the one-time question (annotation/setup/cohorts/)
        return redirect("annotation:study-about-you", study.pk)
    return _work_page(
        request,
        study_id,
        unless=Study.Mode.GROUPS,
        template="annotation/label.html",
        refusal="This study collects groups, not pairs.",
    )


def _to_ask(request: HttpRequest, study: Study) -> bool:
    """Whether the member has attributes to answer (asked once a session: "prefer not to say"
    is an answer). One indexed read of the study's asked attributes when it has none."""
    if request.session.get(f"asked-{study.pk}"):
        return False
    if not study.member_attributes.filter(ask=True).exists():
        return False
    mine = list(
        Membership.objects.filter(study=study, user=request.user).values_list(
            "attributes", flat=True
        )
    )
    return bool(mine) and bool(attributes_to_ask(study.pk, mine[0]))


@login_required
@require_safe
def curate_groups(request: HttpRequest, study_id: int) -> HttpResponse:
    return _work_page(
        request,
        study_id,
        unless=Study.Mode.PAIRS,
        template="annotation/groups.html",
        refusal="This study collects pairs, not groups.",
    )


@login_required
@require_safe
def study_done(request: HttpRequest, study_id: int) -> HttpResponse:
    """The annotator's completion page."""
    study = study_get(request.user, study_id, Action.VIEW)
    progress = selectors.progress_for(study=study, user=request.user)
    context = {
        "study": study,
        "progress": progress,
        "groups": selectors.groups_visible(study=study, user=request.user).count(),
    }
    return render(request, "annotation/done.html", context)
