"""The webhooks page of a study: its webhooks, the form to add one, each one's delivery log.

Reviewers read it; admins add, pause, resume, remove and test (``services.py``)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import Action, require, study_get
from annotation.models import SUBSCRIBABLE, Webhook, WebhookDelivery
from annotation.selectors import may_manage
from common.errors import AppError

from . import services

READ_REFUSED = "Only reviewers and admins of the study can see its webhooks."
LOG_ROWS = 50


class WebhookForm(forms.Form):
    url = forms.URLField(
        max_length=500,
        assume_scheme="https",
        label="URL",
        help_text="http(s) only; it receives a signed JSON POST for each event.",
    )
    events = forms.MultipleChoiceField(
        choices=SUBSCRIBABLE, widget=forms.CheckboxSelectMultiple, label="Events"
    )


def _hook(request: HttpRequest, study_id: int, hook_id: int) -> Webhook:
    require(request.user, study_id, Action.MANAGE, services.MANAGE_ONLY)
    hook = Webhook.objects.filter(study_id=study_id, pk=hook_id).first()
    if hook is None:
        raise Http404("No such webhook in this study.")
    return hook


@login_required
@require_http_methods(["GET", "POST"])
def study_webhooks(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_get(request.user, study_id, Action.REVIEW, message=READ_REFUSED)
    can_manage = may_manage(user=request.user, study=study)
    form = WebhookForm()
    status = 200
    if request.method == "POST":
        require(request.user, study, Action.MANAGE, services.MANAGE_ONLY)
        form = WebhookForm(request.POST)
        status = 400
        if form.is_valid():
            try:
                hook = services.webhook_create(
                    user=request.user,
                    study=study,
                    url=form.cleaned_data["url"],
                    events=form.cleaned_data["events"],
                )
            except AppError as error:
                form.add_error("url", error.message)
            else:
                messages.success(request, f"Webhook {hook.url} added.")
                return redirect("annotation:study-webhooks", study.pk)
    hooks = list(Webhook.objects.filter(study=study))
    log = list(
        WebhookDelivery.objects.filter(webhook__study=study).select_related("webhook")[:LOG_ROWS]
    )
    context = {
        "study": study,
        "can_manage": can_manage,
        "form": form,
        "hooks": hooks,
        "log": log,
        "log_rows": LOG_ROWS,
    }
    return render(request, "annotation/webhooks/list.html", context, status=status)


@login_required
@require_POST
def webhook_action(request: HttpRequest, study_id: int, hook_id: int) -> HttpResponse:
    hook = _hook(request, study_id, hook_id)
    action = request.POST.get("action")
    if action == "test":
        services.webhook_test(user=request.user, hook=hook)
        messages.success(request, f"A test event is on its way to {hook.url}.")
    elif action in ("pause", "resume"):
        services.webhook_switch(user=request.user, hook=hook, active=action == "resume")
    elif action == "remove":
        services.webhook_remove(user=request.user, hook=hook)
        messages.success(request, f"Webhook {hook.url} removed.")
    else:
        return HttpResponse("Unknown action.", status=400, content_type="text/plain")
    return redirect("annotation:study-webhooks", study_id)
