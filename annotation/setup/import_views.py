"""The study's import page: existing judgments or groups from a file, previewed (counts, the
first rows, or the first error with its line), then stored on confirmation — through the
``import_feedback`` command's parser (``feedback_files.py: feedback_read``) and its storing
(``feedback_import.py: feedback_store``, one transaction). Nothing is written before the
confirmation, nor on any error.

Between the preview and the confirmation the file waits under ``MEDIA_ROOT/feedback-previews/``
(a random name kept in the admin's session); it is read again and checked again on
confirmation, removed then, and any left behind is removed by the next preview after
``PREVIEW_HOURS``.
"""

from __future__ import annotations

import io
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.models import Study
from annotation.setup.feedback_files import FeedbackFormatError, FeedbackPlan, feedback_read
from annotation.setup.feedback_import import feedback_store
from annotation.setup.files import read_upload_bytes
from annotation.setup.forms import FeedbackUploadForm
from annotation.setup.views import _context, _posted, _setup_study
from common.errors import AppError

PREVIEW_DIR = "feedback-previews"
PREVIEW_HOURS = 24
PREVIEW_ROWS = 10
SESSION_KEY = "feedback-import"


def _folder() -> Path:
    folder = Path(settings.MEDIA_ROOT) / PREVIEW_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _stash(data: bytes) -> str:
    """Keep ``data`` for the confirmation; returns its token. Removes stale stashes."""
    folder = _folder()
    cutoff = time.time() - PREVIEW_HOURS * 3600
    for old in folder.glob("*.upload"):
        if old.stat().st_mtime < cutoff:
            old.unlink(missing_ok=True)
    token = uuid.uuid4().hex
    (folder / f"{token}.upload").write_bytes(data)
    return token


def _read(study: Study, data: bytes, choice: dict) -> FeedbackPlan:
    return feedback_read(
        study=study,
        raw_lines=io.BytesIO(data),
        name=choice["name"],
        kind=choice["kind"],
        fmt=choice["fmt"],
        provenance=choice["provenance"],
        max_rows=settings.SETUP_UPLOAD_MAX_ROWS,
    )


def _problem(error: Exception) -> str:
    where = f"Line {error.line}: " if getattr(error, "line", None) is not None else ""
    text = error.message if isinstance(error, FeedbackFormatError | AppError) else str(error)
    return f"{where}{text}. Nothing was stored."


def _confirm(request: HttpRequest, study: Study) -> str | None:
    """Store the previewed file (read and checked again): None when stored, else why not."""
    choice = request.session.get(SESSION_KEY) or {}
    token = request.POST.get("token", "")
    path = _folder() / f"{token}.upload"
    known = token.isalnum() and choice.get("token") == token and choice.get("study") == study.pk
    if not (known and path.is_file()):
        return "This preview is no longer available: upload the file again. Nothing was stored."
    try:
        plan = _read(study, path.read_bytes(), choice)
        summary = feedback_store(study=study, plan=plan)
    except FeedbackFormatError as error:
        return _problem(error)
    finally:
        path.unlink(missing_ok=True)
        request.session.pop(SESSION_KEY, None)
    what = (
        f"{summary.judgments:,} pair judgments"
        if plan.kind == "pairs"
        else f"{summary.groups:,} groups with {summary.members:,} members"
    )
    messages.success(request, f"Imported {what} ({summary.provenance}); a refit is queued.")
    return None


@login_required
@require_http_methods(["GET", "POST"])
def study_import(request: HttpRequest, study_id: int) -> HttpResponse:
    """Upload → preview → confirm. Reviewers read the page; the study's admins import."""
    study, can_manage = _setup_study(request, study_id)
    plan = token = problem = None
    if request.method == "POST" and request.POST.get("confirm"):
        problem = _confirm(request, study)
        if problem is None:
            return redirect("annotation:study-import", study.pk)
        form = FeedbackUploadForm()
        status = 400
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
            plan = _read(study, data, choice)
        except (FeedbackFormatError, AppError) as error:
            form.add_error("file", _problem(error))
        else:
            token = _stash(data)
            request.session[SESSION_KEY] = {"token": token, "study": study.pk, **choice}
            status = 200
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
    )
    return render(request, "annotation/setup/import.html", context, status=status)
