"""The study's import page: existing judgments or groups from a file, previewed (counts, the
first rows, or the first error with its line), then stored by the worker on confirmation —
through the ``import_feedback`` command's parser (``feedback_files.py: feedback_read``) and its
storing (``feedback_import.py: feedback_store``, one transaction). Nothing is written before the
confirmation, nor on any error.

Between the preview and the confirmation the file waits under ``feedback-previews/`` in media storage
with its row (``annotation/setup/imports/jobs.py``, which also removes those older than
``PREVIEW_HOURS``). Confirming claims the preview atomically — one import per preview whatever
the clicks — and answers at once; the page then shows the import's progress and result, read
from its row.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.models import FeedbackImport, Study
from annotation.setup.feedback_files import FeedbackFormatError
from annotation.setup.files import read_upload_bytes
from annotation.setup.forms import FeedbackUploadForm
from annotation.setup.imports.jobs import (
    PREVIEW_DIR,
    import_confirm,
    plan_read,
    preview_keep,
)
from annotation.setup.views import _context, _posted, _setup_study
from common.errors import AppError

__all__ = ["PREVIEW_DIR", "study_import"]
PREVIEW_ROWS = 10
SESSION_KEY = "feedback-import"
SHOWN_IMPORTS = 5
GONE = "This preview is no longer available: upload the file again. Nothing was stored."
TAKEN = "This preview was confirmed already: it is imported once (see below)."


def _problem(error: Exception) -> str:
    where = f"Line {error.line}: " if getattr(error, "line", None) is not None else ""
    text = error.message if isinstance(error, FeedbackFormatError | AppError) else str(error)
    return f"{where}{text}. Nothing was stored."


def _confirm(request: HttpRequest, study: Study) -> tuple[str, int] | None:
    """Claim the previewed file for the worker: None when queued, else (why not, status)."""
    choice = request.session.get(SESSION_KEY) or {}
    token = request.POST.get("token", "")
    known = token.isalnum() and choice.get("token") == token and choice.get("study") == study.pk
    if not known:
        return GONE, 400
    job = import_confirm(study=study, token=token)
    if job is None:
        taken = FeedbackImport.objects.filter(token=token, study=study).exclude(
            status=FeedbackImport.Status.PREVIEW
        )
        return (TAKEN, 409) if taken.exists() else (GONE, 400)
    request.session.pop(SESSION_KEY, None)
    messages.success(
        request, f"The import of {job.name} is queued: the worker stores it (progress below)."
    )
    return None


@login_required
@require_http_methods(["GET", "POST"])
def study_import(request: HttpRequest, study_id: int) -> HttpResponse:
    """Upload → preview → confirm. Reviewers read the page; the study's admins import."""
    study, can_manage = _setup_study(request, study_id)
    plan = token = problem = None
    if request.method == "POST" and request.POST.get("confirm"):
        refused = _confirm(request, study)
        if refused is None:
            return redirect("annotation:study-import", study.pk)
        form = FeedbackUploadForm()
        problem, status = refused
    else:
        form = FeedbackUploadForm(_posted(request), _posted(request, files=True))
        status = 400 if form.is_bound else 200
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        choice = {
            "name": upload.name or "upload",
            **{k: form.cleaned_data[k] for k in ("kind", "fmt", "provenance")},
        }
        try:
            data = read_upload_bytes(upload)
            plan = plan_read(study, data, choice)
        except (FeedbackFormatError, AppError) as error:
            form.add_error("file", _problem(error))
        else:
            token = preview_keep(study=study, user=request.user, data=data, choice=choice).token
            request.session[SESSION_KEY] = {"token": token, "study": study.pk, **choice}
            status = 200
    imports = list(
        study.feedback_imports.exclude(status=FeedbackImport.Status.PREVIEW)[:SHOWN_IMPORTS]
    )
    context = _context(
        study,
        can_manage,
        "import",
        form=form,
        problem=problem,
        plan=plan,
        token=token,
        first_pairs=plan.pairs[:PREVIEW_ROWS] if plan else [],
        first_groups=plan.groups[:PREVIEW_ROWS] if plan else [],
        imports=imports,
        importing=any(i.status in ("pending", "running") for i in imports),
    )
    return render(request, "annotation/setup/import.html", context, status=status)
