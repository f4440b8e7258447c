"""Study set-up pages: new/edit, duplicate, archive, items, candidate and gold pairs, members and
the invitation link. Reviewers read the set-up pages; admins of the study (and staff) change
things; annotators see none of them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import Action, require, study_get
from annotation.models import Membership, Study
from annotation.selectors import may_manage
from annotation.setup import members, pairs, pool, selectors, studies
from annotation.setup.cohorts import services as cohorts
from annotation.setup.files import parse_keys, parse_pairs, read_upload
from annotation.setup.forms import (
    DuplicateForm,
    InviteForm,
    MemberAddForm,
    MemberChangeForm,
    StudyForm,
    UploadForm,
)
from annotation.views import render_instructions
from common.access import require_staff
from common.errors import AppError, InvalidInput

SETUP_REFUSED = "Only reviewers and admins of this study can see its set-up."
MANAGE_REFUSED = "Only an admin of the study can change it."
PREVIEW_MAX = 100_000


def _setup_study(request: HttpRequest, study_id: int) -> tuple[Study, bool]:
    """The study for a set-up page: GET for reviewers and admins, POST for admins only."""
    study = study_get(request.user, study_id, Action.REVIEW, message=SETUP_REFUSED)
    if request.method == "POST":
        require(request.user, study, Action.MANAGE, MANAGE_REFUSED)
    return study, may_manage(user=request.user, study=study)


def _context(study: Study, can_manage: bool, active: str, **extra) -> dict:
    return {
        "study": study,
        "can_manage": can_manage,
        "active": active,
        "counts": selectors.setup_counts(study=study),
        **extra,
    }


def _posted(request: HttpRequest, *, files: bool = False):
    """The POST data (or files) to bind a form to, even when empty; None for GET."""
    if request.method != "POST":
        return None
    return request.FILES if files else request.POST


def _form_error(form, error: AppError) -> None:
    form.add_error(None, error.message)


# --- New / edit ---------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    require_staff(request.user, "Only staff create studies.")
    form = StudyForm(_posted(request), user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            study = studies.study_save(user=request.user, data=form.cleaned_data)
        except AppError as error:
            _form_error(form, error)
        else:
            messages.success(request, f"Study {study.name!r} created. Next: its items and members.")
            return redirect("annotation:study-settings", study.pk)
    status = 400 if form.is_bound else 200
    return render(
        request, "annotation/setup/settings.html", {"form": form, "study": None}, status=status
    )


@login_required
@require_http_methods(["GET", "POST"])
def study_settings(request: HttpRequest, study_id: int) -> HttpResponse:
    study, can_manage = _setup_study(request, study_id)
    form = StudyForm(_posted(request), instance=study, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            studies.study_save(user=request.user, study=study, data=form.cleaned_data)
        except AppError as error:
            _form_error(form, error)
        else:
            messages.success(request, "Settings saved.")
            return redirect("annotation:study-settings", study.pk)
    if not can_manage:
        for field in form.fields.values():
            field.disabled = True
    context = _context(study, can_manage, "settings", form=form, duplicate=DuplicateForm())
    return render(
        request, "annotation/setup/settings.html", context, status=400 if form.is_bound else 200
    )


@login_required
@require_POST
def study_duplicate(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = _setup_study(request, study_id)
    form = DuplicateForm(request.POST)
    try:
        if not form.is_valid():
            raise InvalidInput("Give the copy a name of at most 200 characters.")
        copy = studies.study_duplicate(
            user=request.user, study=study, name=form.cleaned_data["name"]
        )
    except AppError as error:
        messages.error(request, error.message)
        context = _context(
            study,
            True,
            "settings",
            form=StudyForm(instance=study, user=request.user),
            duplicate=form,
        )
        return render(request, "annotation/setup/settings.html", context, status=error.status_code)
    messages.success(request, f"Study duplicated as {copy.name!r} (settings, items and pairs).")
    return redirect("annotation:study-settings", copy.pk)


@login_required
@require_POST
def study_archive(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = _setup_study(request, study_id)
    archive = request.POST.get("archive", "1") != "0"
    studies.study_archive(user=request.user, study=study, archive=archive)
    messages.success(request, "Study archived." if archive else "Study restored (still closed).")
    return redirect("annotation:study-settings", study.pk)


@login_required
@require_POST
def markdown_preview(request: HttpRequest) -> JsonResponse:
    """The instructions' live preview: Markdown rendered and sanitised as the study page does."""
    text = request.POST.get("text", "")
    if len(text) > PREVIEW_MAX:
        return JsonResponse({"detail": "The text is too long to preview."}, status=400)
    return JsonResponse({"html": render_instructions(text)})


# --- Items and pairs ------------------------------------------------------------------------------


def _upload_text(form: UploadForm) -> tuple[str, bool]:
    upload = form.cleaned_data.get("file")
    if upload:
        return read_upload(upload), False
    return form.cleaned_data["text"], True


@login_required
@require_http_methods(["GET", "POST"])
def study_items(request: HttpRequest, study_id: int) -> HttpResponse:
    study, can_manage = _setup_study(request, study_id)
    form = UploadForm(_posted(request), _posted(request, files=True))
    if request.method == "POST" and form.is_valid():
        try:
            text, pasted = _upload_text(form)
            keys = parse_keys(text, pasted=pasted)
            done = pool.pool_upload(
                user=request.user, study=study, keys=keys, replace=form.cleaned_data["replace"]
            )
        except AppError as error:
            _form_error(form, error)
        else:
            messages.success(
                request,
                f"{done['keys']} keys read, {done['added']} items added; "
                f"the pool has {done['pool']} items.",
            )
            return redirect("annotation:study-items", study.pk)
    context = _context(
        study, can_manage, "items", form=form, sample=selectors.pool_sample(study=study)
    )
    return render(
        request, "annotation/setup/items.html", context, status=400 if form.is_bound else 200
    )


@login_required
@require_http_methods(["GET", "POST"])
def study_pairs(request: HttpRequest, study_id: int) -> HttpResponse:
    study, can_manage = _setup_study(request, study_id)
    form = UploadForm(_posted(request), _posted(request, files=True))
    if request.method == "POST" and form.is_valid():
        try:
            text, _ = _upload_text(form)
            rows = parse_pairs(text, labelled=False)
            done = pairs.candidate_pairs_upload(
                user=request.user, study=study, rows=rows, replace=form.cleaned_data["replace"]
            )
        except AppError as error:
            _form_error(form, error)
        else:
            messages.success(
                request, f"{done['added']} candidate pairs added; {done['total']} in all."
            )
            return redirect("annotation:study-pairs", study.pk)
    context = _context(
        study, can_manage, "pairs", form=form, pairs=selectors.candidate_pairs(study=study)
    )
    return render(
        request, "annotation/setup/pairs.html", context, status=400 if form.is_bound else 200
    )


@login_required
@require_http_methods(["GET", "POST"])
def study_gold(request: HttpRequest, study_id: int) -> HttpResponse:
    """Gold pairs: upload → a preview of every row (new, relabelled, unchanged) → confirm."""
    study, can_manage = _setup_study(request, study_id)
    form = UploadForm(_posted(request), _posted(request, files=True))
    preview = None
    if request.method == "POST" and form.is_valid():
        try:
            text, _ = _upload_text(form)
            rows = parse_pairs(text, labelled=True)
            if request.POST.get("confirm") == "1":
                done = pairs.gold_pairs_upload(user=request.user, study=study, rows=rows)
                messages.success(
                    request,
                    f"{done['added']} gold pairs added, {done['relabelled']} relabelled.",
                )
                return redirect("annotation:study-gold", study.pk)
            preview = pairs.pairs_resolve(study=study, rows=rows)
            form = UploadForm(initial={"text": text})
            context = _context(
                study,
                can_manage,
                "gold",
                form=form,
                preview=preview,
                preview_text=text,
                gold=selectors.gold_pairs(study=study),
            )
            return render(request, "annotation/setup/gold.html", context)
        except AppError as error:
            _form_error(form, error)
    context = _context(study, can_manage, "gold", form=form, gold=selectors.gold_pairs(study=study))
    return render(
        request, "annotation/setup/gold.html", context, status=400 if form.is_bound else 200
    )


# --- Members --------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def study_members(request: HttpRequest, study_id: int) -> HttpResponse:
    study, can_manage = _setup_study(request, study_id)
    add_form = MemberAddForm(prefix="add")
    invite_form = InviteForm(prefix="invite")
    invitation = None
    status = 200
    if request.method == "POST":
        status = 400
        link_for = lambda uid, token: request.build_absolute_uri(  # noqa: E731
            reverse("accounts:invitation", args=[uid, token])
        )
        if request.POST.get("action") == "resend":
            chosen = request.POST.get("membership", "")
            membership = members.memberships_of(study, int(chosen)) if chosen.isdigit() else None
            if membership is None:
                raise Http404("No such member.")
            try:
                invitation = members.member_invite_resend(
                    user=request.user, membership=membership, link_for=link_for
                )
            except AppError as error:
                messages.error(request, error.message)
                return redirect("annotation:study-members", study.pk)
            status = 200
        elif request.POST.get("action") == "invite":
            invite_form = InviteForm(request.POST, prefix="invite")
            if invite_form.is_valid():
                data = invite_form.cleaned_data
                try:
                    invitation = members.member_invite(
                        user=request.user,
                        study=study,
                        username=data["username"],
                        email=data["email"],
                        role=data["role"],
                        target=data["target"],
                        link_for=link_for,
                    )
                    status = 200
                    invite_form = InviteForm(prefix="invite")
                except AppError as error:
                    _form_error(invite_form, error)
        else:
            add_form = MemberAddForm(request.POST, prefix="add")
            if add_form.is_valid():
                data = add_form.cleaned_data
                try:
                    member = members.member_add(
                        user=request.user,
                        study=study,
                        who=data["who"],
                        role=data["role"],
                        target=data["target"],
                    )
                except AppError as error:
                    _form_error(add_form, error)
                else:
                    messages.success(request, f"{member.user.username} added as {member.role}.")
                    return redirect("annotation:study-members", study.pk)
    return _members_page(request, study, can_manage, add_form, invite_form, invitation, status)


def _members_page(
    request, study, can_manage, add_form=None, invite_form=None, invitation=None, status=200
):
    found, attributes = selectors.members_of(study=study), []
    if can_manage:  # a member's attributes: the study's admins only
        attributes = cohorts.study_attributes(study=study)
        for member in found:
            mine = member.attributes or {}
            member.attribute_cells = [(a, mine.get(a.name, "")) for a in attributes]
    context = _context(
        study,
        can_manage,
        "members",
        members=found,
        attributes=attributes,
        add_form=add_form or MemberAddForm(prefix="add"),
        invite_form=invite_form or InviteForm(prefix="invite"),
        invitation=invitation,
        roles=Membership.Role.choices,
    )
    response = render(request, "annotation/setup/members.html", context, status=status)
    response["Cache-Control"] = "no-store"  # may show an invitation link
    return response


def _membership(request, study_id: int, membership_id: int) -> Membership:
    study, _ = _setup_study(request, study_id)
    membership = members.memberships_of(study, membership_id)
    if membership is None:
        raise Http404("No such member.")
    return membership


@login_required
@require_POST
def study_member(request: HttpRequest, study_id: int, membership_id: int) -> HttpResponse:
    membership = _membership(request, study_id, membership_id)
    form = MemberChangeForm(request.POST)
    try:
        if not form.is_valid():
            errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
            raise InvalidInput(f"Not changed: {errors}")
        members.member_change(
            user=request.user,
            membership=membership,
            role=form.cleaned_data["role"],
            target=form.cleaned_data["target"],
        )
    except AppError as error:
        messages.error(request, error.message)
        return _members_page(request, membership.study, True, status=error.status_code)
    messages.success(request, f"{membership.user.username}: changed.")
    return redirect("annotation:study-members", study_id)


@login_required
@require_POST
def study_member_remove(request: HttpRequest, study_id: int, membership_id: int) -> HttpResponse:
    membership = _membership(request, study_id, membership_id)
    try:
        members.member_remove(user=request.user, membership=membership)
    except AppError as error:
        messages.error(request, error.message)
        return _members_page(request, membership.study, True, status=error.status_code)
    messages.success(request, f"{membership.user.username} removed; their answers stay.")
    return redirect("annotation:study-members", study_id)
