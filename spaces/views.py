"""Pages for embedding spaces (staff only): the list, the upload form, an import's progress."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods

from common.access import require_staff
from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.records.forms import EmbeddingUploadForm
from spaces.vectors.uploads import embedding_import_create


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
    spaces = EmbeddingSpace.objects.order_by("name")
    imports = EmbeddingImport.objects.select_related("space", "created_by")[:20]
    return render(request, "spaces/list.html", {"spaces": spaces, "imports": imports})


def _body_too_large(request: HttpRequest) -> bool:
    """A request body above two files at the limit (plus 1 MB of fields) is refused unread."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > (2 * settings.MAX_UPLOAD_MB + 1) * 1024 * 1024


@csrf_exempt  # the CSRF check runs in _space_upload, after the size check: the
@staff_required  # middleware would otherwise read (and store) the whole body first
@require_http_methods(["GET", "POST"])
def space_upload(request: HttpRequest) -> HttpResponse:
    if request.method == "POST" and _body_too_large(request):
        context = {
            "form": EmbeddingUploadForm(),
            "max_upload_mb": settings.MAX_UPLOAD_MB,
            "upload_error": f"The upload is larger than {settings.MAX_UPLOAD_MB} MB per file.",
        }
        return render(request, "spaces/upload.html", context, status=413)
    return _space_upload(request)


@csrf_protect
def _space_upload(request: HttpRequest) -> HttpResponse:
    posted = request.method == "POST"
    form = EmbeddingUploadForm(request.POST, request.FILES) if posted else EmbeddingUploadForm()
    if posted and form.is_valid():
        data = form.cleaned_data
        try:
            job = embedding_import_create(
                user=request.user,
                upload=data["file"],
                extra=data.get("extra_file"),
                name=data["name"],
                fmt=data["format"],
                kind=data.get("kind") or "",
                tags=form.tag_list(),
                limit=data.get("limit"),
            )
        except InputFileError as exc:
            form.add_error("file", str(exc))
        else:
            return redirect("spaces:import", import_id=job.pk)
    status = 400 if posted else 200
    context = {"form": form, "max_upload_mb": settings.MAX_UPLOAD_MB}
    return render(request, "spaces/upload.html", context, status=status)


def _status(job: EmbeddingImport) -> dict:
    space = job.space
    return {
        "id": job.pk,
        "name": job.name,
        "status": job.status,
        "stage": job.stage,
        "progress_rows": job.progress_rows,
        "total_rows": job.total_rows,
        "error": job.error,
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
    }


@staff_required
@require_GET
def import_detail(request: HttpRequest, import_id: int) -> HttpResponse:
    job = get_object_or_404(EmbeddingImport.objects.select_related("space"), pk=import_id)
    if job.format.startswith("records-") and job.status == EmbeddingImport.Status.PENDING:
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
