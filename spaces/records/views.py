"""Pages of record spaces (staff only): upload a table, choose its columns, and later change
which columns annotators see."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from spaces.exceptions import EmbeddingFormatError, InputFileError
from spaces.forms import TableUploadForm
from spaces.models import EmbeddingImport, EmbeddingSpace, first_record
from spaces.records.columns import guess_roles, record_columns, record_hidden_columns_set
from spaces.records.forms import ColumnsForm, ShownColumnsForm
from spaces.records.uploads import (
    RECORDS_PREFIX,
    record_upload_create,
    record_upload_finish,
    record_upload_table,
)
from spaces.views import staff_required, table_upload_page

PREVIEW_ROWS = 5


@csrf_exempt
@staff_required
@require_http_methods(["GET", "POST"])
def records_upload(request: HttpRequest) -> HttpResponse:
    def create(data):
        job = record_upload_create(user=request.user, upload=data["file"], name=data["name"])
        return redirect("spaces:records-columns", import_id=job.pk)

    return table_upload_page(
        request, form_class=TableUploadForm, template="spaces/records_upload.html", create=create
    )


@staff_required
@require_http_methods(["GET", "POST"])
def records_columns(request: HttpRequest, import_id: int) -> HttpResponse:
    job = get_object_or_404(EmbeddingImport, pk=import_id, format__startswith=RECORDS_PREFIX)
    if job.status != EmbeddingImport.Status.PENDING:
        return redirect("spaces:import", import_id=job.pk)
    try:
        frame = record_upload_table(job)
    except InputFileError as exc:  # the stored file went bad: say so
        return render(
            request, "spaces/records_columns.html", {"job": job, "read_error": str(exc)}, status=400
        )
    guess = guess_roles(frame)
    columns = [str(c) for c in frame.columns]
    initial = {"label_column": guess["label_column"], "key_column": guess["key_column"]}
    posted = request.method == "POST"
    form = ColumnsForm(
        request.POST if posted else None,
        columns=columns,
        initial_roles=guess["roles"],
        hidden=[guess["label_column"]] if guess["label_column"] else [],
        initial=initial,
    )
    if posted and form.is_valid():
        try:
            record_upload_finish(
                job=job,
                roles=form.roles(),
                label_column=form.cleaned_data["label_column"],
                key_column=form.cleaned_data["key_column"],
                hidden_columns=form.hidden_columns(),
                frame=frame,  # read once per request, above
            )
        except InputFileError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("spaces:import", import_id=job.pk)
    preview = frame.head(PREVIEW_ROWS)
    rows = [
        {
            "field": field,
            "shown": shown,
            "column": c,
            "values": [str(v) for v in preview[c].tolist()],
        }
        for field, shown, c in zip(form.role_fields(), form.shown_fields(), columns, strict=True)
    ]
    context = {"job": job, "form": form, "rows": rows, "n_rows": len(frame)}
    return render(request, "spaces/records_columns.html", context, status=400 if posted else 200)


@staff_required
@require_http_methods(["GET", "POST"])
def records_shown(request: HttpRequest, space_id: int) -> HttpResponse:
    """Which columns of an existing record space annotators see (POST–redirect–GET)."""
    space = get_object_or_404(EmbeddingSpace, pk=space_id, kind=EmbeddingSpace.Kind.RECORDS)
    first = first_record(space.pk)
    columns = record_columns(space, first)
    posted = request.method == "POST"
    form = ShownColumnsForm(
        request.POST if posted else None, columns=columns, hidden=space.hidden_columns
    )
    if posted and form.is_valid():
        try:
            record_hidden_columns_set(space, form.hidden_columns())
        except EmbeddingFormatError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Annotators of “{space.name}” now see the checked columns.")
            return redirect("spaces:records-shown", space_id=space.pk)
    rows = [
        {"column": c, "shown": field, "value": str(first.get(c, ""))}
        for c, field in zip(columns, form.shown_fields(), strict=True)
    ]
    context = {"space": space, "form": form, "rows": rows}
    return render(request, "spaces/records_shown.html", context, status=400 if posted else 200)
