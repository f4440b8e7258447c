"""Pages of record spaces (staff only): upload a table, choose its columns (the import then runs
in the worker), and later change which columns annotators see."""

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
    record_upload_choose,
    record_upload_create,
    record_upload_head,
    waiting_for_columns,
)
from spaces.uploads import public_error
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
    """Choose the columns of a record upload; the POST checks the choice against the table's
    first rows and queues the import (the worker reads the whole table)."""
    job = get_object_or_404(EmbeddingImport, pk=import_id, format__startswith=RECORDS_PREFIX)
    if not waiting_for_columns(job):
        return redirect("spaces:import", import_id=job.pk)
    try:
        head = record_upload_head(job)
    except InputFileError as exc:  # the stored file went bad: say so
        context = {"job": job, "read_error": public_error(exc)}
        return render(request, "spaces/records_columns.html", context, status=400)
    guess = guess_roles(head.frame)
    columns = list(head.columns)
    initial = {"label_column": guess["label_column"], "key_column": guess["key_column"]}
    posted = request.method == "POST"
    form = ColumnsForm(
        request.POST if posted else None,
        columns=columns,
        initial_roles=guess["roles"],
        hidden=[guess["label_column"]] if guess["label_column"] else [],
        label_guessed=bool(guess["label_column"]),
        initial=initial,
    )
    if posted and form.is_valid():
        try:
            record_upload_choose(
                job=job,
                head=head,
                roles=form.roles(),
                label_column=form.label(),
                key_column=form.cleaned_data["key_column"],
                hidden_columns=form.hidden_columns(),
            )
        except InputFileError as exc:
            form.add_error(None, public_error(exc))
        else:
            return redirect("spaces:import", import_id=job.pk)
    preview = head.frame.head(PREVIEW_ROWS)
    rows = [
        {
            "field": field,
            "column": c,
            "values": [str(v) for v in preview[c].tolist()],
            "flag": guess["flags"].get(c, ""),
        }
        for field, c in zip(form.column_fields(), columns, strict=True)
    ]
    context = {
        "job": job,
        "form": form,
        "rows": rows,
        "n_rows": head.total_rows,
        "sample_rows": len(head.frame),
        "worker_error": "" if posted else job.error,
    }
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
