"""Pages every kind of space shares (staff only): the list, a space's sharing, an import's
progress, and the steps of the upload pages (the staff check, the size check before the body is
read, the table upload form of records and texts)."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_GET, require_http_methods

from common.access import require_staff
from common.errors import Conflict, NotAllowed
from spaces.deletion import may_delete_space, space_delete, space_deletion_plan
from spaces.exceptions import InputFileError
from spaces.forms import SharingForm
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.sharing import space_sharing_set, users_named
from spaces.uploads import public_error


def staff_required(view):
    """Logged-in staff or superusers; anyone else logged in gets 403."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        require_staff(request.user, "Only admins manage embedding spaces.")
        return view(request, *args, **kwargs)

    return wrapper


@staff_required
@require_GET
def space_list(request: HttpRequest) -> HttpResponse:
    spaces = EmbeddingSpace.objects.select_related("owner").order_by("name")
    imports = EmbeddingImport.objects.select_related("space", "created_by")[:20]
    return render(request, "spaces/list.html", {"spaces": spaces, "imports": imports})


@staff_required
@require_http_methods(["GET", "POST"])
def space_sharing(request: HttpRequest, space_id: int) -> HttpResponse:
    """Who may use a space besides staff: its owner, named people, every study admin."""
    space = get_object_or_404(EmbeddingSpace.objects.select_related("owner"), pk=space_id)
    named = sorted(u.get_username() for u in space.shared_with.all())
    initial = {
        "owner": space.owner.get_username() if space.owner else "",
        "shared_with": ", ".join(named),
        "study_admins": space.shared_with_study_admins,
    }
    posted = request.method == "POST"
    form = SharingForm(request.POST if posted else None, initial=initial)
    if posted and form.is_valid():
        data = form.cleaned_data
        try:
            owner = users_named(data["owner"]) if data["owner"].strip() else []
            if len(owner) > 1:
                raise InputFileError("the owner is one person")
            space_sharing_set(
                space=space,
                owner=owner[0] if owner else None,
                shared_with=users_named(data["shared_with"]),
                study_admins=data["study_admins"],
            )
        except InputFileError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved who may use “{space.name}”.")
            return redirect("spaces:sharing", space_id=space.pk)
    context = {"space": space, "form": form}
    return render(request, "spaces/sharing.html", context, status=400 if posted else 200)


@login_required
@require_http_methods(["GET", "POST"])
def space_delete_page(request: HttpRequest, space_id: int) -> HttpResponse:
    """Delete a space (its owner or staff): what goes with it, or which studies keep it."""
    space = get_object_or_404(EmbeddingSpace.objects.select_related("owner"), pk=space_id)
    if not may_delete_space(request.user, space):
        raise NotAllowed("Only the space's owner or staff may delete it.")
    status, error = 200, ""
    if request.method == "POST":
        try:
            space_delete(space=space, actor=request.user)
        except Conflict as exc:
            status, error = 409, exc.message
        else:
            messages.success(request, f"Deleted the space “{space.name}” and what went with it.")
            return redirect("spaces:list" if request.user.is_staff else "home")
    plan = space_deletion_plan(space=space)
    context = {"space": space, "plan": plan, "error": error}
    return render(request, "spaces/delete.html", context, status=status)


def body_over(request: HttpRequest, megabytes: int) -> bool:
    """Whether the request announces a body above ``megabytes`` MB (refused before it is read)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > megabytes * 1024 * 1024


def table_upload_page(
    request: HttpRequest, *, form_class, template: str, create, extra: dict | None = None
) -> HttpResponse:
    """The upload page of a table (records, texts): a body above the table limit (plus 1 MB of
    fields) is refused unread (413); a valid form goes to ``create(cleaned_data)``, whose
    ``InputFileError`` becomes the file's form error."""
    context = {"max_table_mb": settings.MAX_TABLE_MB, **(extra or {})}
    if request.method == "POST" and body_over(request, settings.MAX_TABLE_MB + 1):
        context |= {
            "form": form_class(),
            "upload_error": f"The upload is larger than {settings.MAX_TABLE_MB} MB.",
        }
        return render(request, template, context, status=413)
    return _table_upload_form(
        request, form_class=form_class, template=template, create=create, context=context
    )


@csrf_protect  # after the size check: the middleware would otherwise read the whole body first
def _table_upload_form(request, *, form_class, template, create, context):
    posted = request.method == "POST"
    form = form_class(request.POST, request.FILES) if posted else form_class()
    if posted and form.is_valid():
        try:
            return create(form.cleaned_data)
        except InputFileError as exc:
            form.add_error("file", public_error(exc))
    context["form"] = form
    return render(request, template, context, status=400 if posted else 200)


def _status(job: EmbeddingImport) -> dict:
    space = job.space
    return {
        "id": job.pk,
        "name": job.name,
        "status": job.status,
        "stage": job.stage,
        "progress_rows": job.progress_rows,
        "total_rows": job.total_rows,
        "error": public_error(job.error),  # (rows written before errors lost their paths)
        "space": None
        if space is None
        else {
            "id": space.pk,
            "name": space.name,
            "items": space.item_count,
            "dimension": space.dimension,
            "sha256": space.sha256,
        },
        "finished": job.status in (EmbeddingImport.Status.DONE, EmbeddingImport.Status.FAILED),
        # A record upload the worker handed back (a value its column choice cannot take).
        "columns_url": reverse("spaces:records-columns", kwargs={"import_id": job.pk})
        if _waits_for_columns(job)
        else None,
    }


def _waits_for_columns(job: EmbeddingImport) -> bool:
    return (
        job.format.startswith("records-")
        and job.status == EmbeddingImport.Status.PENDING
        and job.stage == "columns"
    )


@staff_required
@require_GET
def import_detail(request: HttpRequest, import_id: int) -> HttpResponse:
    job = get_object_or_404(EmbeddingImport.objects.select_related("space"), pk=import_id)
    if _waits_for_columns(job):
        return redirect("spaces:records-columns", import_id=job.pk)  # waits for its columns
    status_url = reverse("spaces:import-status", kwargs={"import_id": job.pk})
    return render(
        request,
        "spaces/import.html",
        {"job": job, "status": _status(job), "status_url": status_url},
    )


@staff_required
@require_GET
def import_status(request: HttpRequest, import_id: int) -> JsonResponse:
    job = get_object_or_404(EmbeddingImport.objects.select_related("space"), pk=import_id)
    return JsonResponse(_status(job))
