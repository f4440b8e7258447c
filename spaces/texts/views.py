"""The upload page of text spaces (staff only)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from spaces.texts import sentence_model
from spaces.texts.forms import TextUploadForm
from spaces.texts.uploads import text_upload_create
from spaces.views import staff_required, table_upload_page


@csrf_exempt
@staff_required
@require_http_methods(["GET", "POST"])
def texts_upload(request: HttpRequest) -> HttpResponse:
    def create(data):
        job = text_upload_create(
            user=request.user,
            upload=data["file"],
            name=data["name"],
            text_column=data["text_column"],
            key_column=data.get("key_column") or "",
        )
        return redirect("spaces:import", import_id=job.pk)

    extra = {"text_available": sentence_model.available(), "text_missing": sentence_model.MISSING}
    return table_upload_page(
        request,
        form_class=TextUploadForm,
        template="spaces/texts_upload.html",
        create=create,
        extra=extra,
    )
