"""Pages of member attributes (cohorts): define one and give members values (posted from the
members page, admins only), and the one-time question a member answers on their first visit
when the admins ask it (``MemberAttribute.ask``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import Action, require, study_get
from annotation.models import Membership
from annotation.models.cohorts import attributes_to_ask
from annotation.setup import members
from annotation.setup.cohorts import services as cohorts
from common.errors import AppError

MANAGE_REFUSED = "Only an admin of the study can change member attributes."


@login_required
@require_POST
def attribute_save(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_get(request.user, study_id, Action.MANAGE, message=MANAGE_REFUSED)
    name = request.POST.get("name", "")
    try:
        if request.POST.get("action") == "delete":
            cohorts.attribute_delete(user=request.user, study=study, name=name)
            messages.success(request, f"Attribute {name} removed.")
        else:
            attribute = cohorts.attribute_define(
                user=request.user,
                study=study,
                name=name,
                values=request.POST.get("values", ""),
                ask=request.POST.get("ask") == "on",
            )
            messages.success(request, f"Attribute {attribute.name}: {', '.join(attribute.values)}.")
    except AppError as error:
        messages.error(request, error.message)
    return redirect("annotation:study-members", study.pk)


@login_required
@require_POST
def member_attributes(request: HttpRequest, study_id: int, membership_id: int) -> HttpResponse:
    study = study_get(request.user, study_id, Action.MANAGE, message=MANAGE_REFUSED)
    membership = members.memberships_of(study, membership_id)
    if membership is None:
        raise Http404("No such member.")
    sent = {
        a.name: request.POST.get(f"attr-{a.pk}", "") for a in cohorts.study_attributes(study=study)
    }
    try:
        cohorts.member_attributes_set(user=request.user, membership=membership, attributes=sent)
        messages.success(request, f"{membership.user.username}: attributes saved.")
    except AppError as error:
        messages.error(request, error.message)
    return redirect("annotation:study-members", study.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def about_you(request: HttpRequest, study_id: int) -> HttpResponse:
    """The question a member answers once (the admins' attributes with ``ask``); then the
    labelling page. Each answer may be left out ("prefer not to say")."""
    study = study_get(request.user, study_id, Action.VIEW)
    membership = Membership.objects.filter(study=study, user=request.user).first()
    asked = attributes_to_ask(study.pk, membership.attributes if membership else {})
    if membership is None or not asked:
        return redirect("annotation:label", study.pk)
    if request.method == "POST":
        require(request.user, study, Action.VIEW)
        answers = {a.name: request.POST.get(f"attr-{a.pk}", "") for a in asked}
        try:
            cohorts.own_attributes_answer(user=request.user, study=study, answers=answers)
        except AppError as error:
            messages.error(request, error.message)
            return redirect("annotation:study-about-you", study.pk)
        request.session[f"asked-{study.pk}"] = True  # "prefer not to say": asked once
        return redirect("annotation:label", study.pk)
    return render(request, "annotation/about_you.html", {"study": study, "asked": asked})
