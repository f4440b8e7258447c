"""The upload page of embedding files (staff only)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods

from spaces.exceptions import InputFileError
from spaces.uploads import public_error
from spaces.vectors.forms import EmbeddingUploadForm
from spaces.vectors.uploads import embedding_import_create
from spaces.views import body_over, staff_required


@csrf_exempt  # the CSRF check runs in _space_upload, after the size check: the
@staff_required  # middleware would otherwise read (and store) the whole body first
@require_http_methods(["GET", "POST"])
def space_upload(request: HttpRequest) -> HttpResponse:
    # two files at the limit plus 1 MB of fields: a larger body is refused unread
    if request.method == "POST" and body_over(request, 2 * settings.MAX_UPLOAD_MB + 1):
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
            form.add_error("file", public_error(exc))
        else:
            return redirect("spaces:import", import_id=job.pk)
    status = 400 if posted else 200
    context = {"form": form, "max_upload_mb": settings.MAX_UPLOAD_MB}
    return render(request, "spaces/upload.html", context, status=status)
