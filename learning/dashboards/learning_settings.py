"""A study's learning settings page (study admins only): when a new metric version comes —
minimum new answers, minutes, the quiet window — how sensitive drift flags are, and FACE's k.

The form reads and writes ``StudyLearningSettings``; a change is audited (``study.change``,
detail ``learning``) and queues a refit, which fits again with the new settings.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import Action, study_get
from annotation.models import Study
from audit.services import Action as AuditAction
from audit.services import audit_record
from learning.models import StudyLearningSettings
from learning.refits.scheduling import refit_request
from learning.versions.selectors import learning_settings_get

FIELDS = [
    "version_min_new_answers",
    "version_min_minutes",
    "debounce_seconds",
    "drift_alarm_rate",
    "face_components",
]


class LearningSettingsForm(forms.ModelForm):
    """What a study admin sets in the browser, with help text that says what each does."""

    class Meta:
        model = StudyLearningSettings
        fields = FIELDS
        labels = {
            "version_min_new_answers": "New answers per version during a burst",
            "version_min_minutes": "Minutes per version during a burst",
            "debounce_seconds": "Quiet window (seconds)",
            "drift_alarm_rate": "Drift alarm rate",
            "face_components": "FACE's k",
        }
        help_texts = {
            "version_min_new_answers": "While answers keep coming, a new version waits for this "
            "many new answers (or the minutes below). It never makes the last answers wait: "
            "once the study is quiet, what has arrived gets a version. Default 10.",
            "version_min_minutes": "… or until this many minutes have passed since the last "
            "version, whichever comes first. Default 5.",
            "debounce_seconds": "A study is quiet when no answer came for this long; a burst "
            "is fitted once, this long after its last answer (plus the fit). 1–60; default 3.",
            "drift_alarm_rate": "A new EXPLORE version is flagged when the answers since an "
            "older version (the published one, and the one 300 answers back) gain less over "
            "guessing the comparable rate under that version than its own held-out answers "
            "promised, beyond chance; answers to pairs a strategy chose for being uncertain are "
            "left out (only its uniformly drawn control pairs, three quarters of its picks, "
            "count). This rate is the chance that a study whose annotators never change their "
            "rule is flagged at all, over all its versions together: larger is more sensitive, "
            "with more false alarms. Between 0.000001 and 0.2; default 0.05.",
            "face_components": "How many sensitive directions FACE removes (the directions in "
            "which comparable items differ most). Empty: chosen from the data. Must be smaller "
            "than the space's dimension. Default 3.",
        }

    def __init__(self, *args, study: Study, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.study = study
        self.fields["version_min_new_answers"].min_value = 1
        self.fields["version_min_new_answers"].widget.attrs["min"] = 1
        self.fields["debounce_seconds"].widget.attrs.update(min=1, max=60)
        self.fields["drift_alarm_rate"].widget.attrs["step"] = "any"

    def clean_version_min_new_answers(self) -> int:
        value = self.cleaned_data["version_min_new_answers"]
        if value < 1:
            raise forms.ValidationError("At least 1 new answer.")
        return value

    def clean_debounce_seconds(self) -> int:
        value = self.cleaned_data["debounce_seconds"]
        if value < 1:
            raise forms.ValidationError("At least 1 second.")
        return value

    def clean_face_components(self) -> int | None:
        k = self.cleaned_data["face_components"]
        dimension = self.study.space.dimension
        if k is not None and not 1 <= k < dimension:
            raise forms.ValidationError(
                f"FACE's k must lie between 1 and {dimension - 1} (the space has {dimension} "
                "dimensions); leave it empty to choose it from the data."
            )
        return k


@transaction.atomic
def learning_settings_save(*, user, study: Study, data: dict) -> dict:
    """Store the form's cleaned ``data``; the changes (audited), and a refit queued when any."""
    learning = StudyLearningSettings.objects.select_for_update().get(
        pk=learning_settings_get(study_id=study.pk).pk
    )
    changes = {
        name: [getattr(learning, name), data[name]]
        for name in FIELDS
        if getattr(learning, name) != data[name]
    }
    if not changes:
        return changes
    for name in changes:
        setattr(learning, name, data[name])
    learning.save(update_fields=list(changes))
    audit_record(
        action=AuditAction.STUDY_CHANGE,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"learning": changes},
    )
    refit_request(study_id=study.pk)  # the new settings take effect in the next version
    return changes


@login_required
@require_http_methods(["GET", "POST"])
def study_learning_settings(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_get(
        request.user,
        study_id,
        Action.MANAGE,
        queryset=Study.objects.select_related("space"),
        message="Only an admin of the study can change its learning settings.",
    )
    # Unsaved defaults until the first save: reading the page writes nothing.
    learning = StudyLearningSettings.objects.filter(study=study).first()
    learning = learning or StudyLearningSettings(study=study)
    posted = request.POST if request.method == "POST" else None
    form = LearningSettingsForm(posted, instance=learning, study=study)
    if posted is not None and form.is_valid():
        changes = learning_settings_save(user=request.user, study=study, data=form.cleaned_data)
        messages.success(request, "Learning settings saved." if changes else "Nothing changed.")
        return redirect("learning:study-learning-settings", study.pk)
    context = {"study": study, "active": "learning-settings", "form": form}
    return render(
        request, "learning/learning_settings.html", context, status=400 if form.is_bound else 200
    )
