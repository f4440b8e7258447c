"""The pages where a study's admins define its WEAT tests: name the test, build the four word
sets (search the space's keys or paste a list), preview it under the Euclidean and the current
metric, save, change or delete it. The checks and writes are ``learning.evaluation.weat_tests``;
these views only read the form and render.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import Action, study_get
from annotation.models import Study
from learning.evaluation import weat_tests
from learning.evaluation.weat import MIN_WORDS, SETS
from learning.evaluation.weat_tests import SET_LABELS, WeatInputError
from learning.models import WeatTest

WORDS_HELP = "One word per line, or separated by commas; or search the space's words above."


class WeatTestForm(forms.Form):
    name = forms.CharField(
        label="Test name", max_length=200, help_text="For example “Flowers / Pleasant”."
    )
    kind = forms.ChoiceField(
        label="The association is",
        choices=WeatTest.Kind.choices,
        initial=WeatTest.Kind.UNFAIR,
        help_text="Unfair associations should lose significance under a fair metric; "
        "meaningful ones should keep it.",
    )
    x_name = forms.CharField(label="Name of X", max_length=100, initial="X")
    x_words = forms.CharField(label="Words of X", widget=forms.Textarea(attrs={"rows": 4}))
    y_name = forms.CharField(label="Name of Y", max_length=100, initial="Y")
    y_words = forms.CharField(label="Words of Y", widget=forms.Textarea(attrs={"rows": 4}))
    a_name = forms.CharField(label="Name of A", max_length=100, initial="A")
    a_words = forms.CharField(label="Words of A", widget=forms.Textarea(attrs={"rows": 4}))
    b_name = forms.CharField(label="Name of B", max_length=100, initial="B")
    b_words = forms.CharField(label="Words of B", widget=forms.Textarea(attrs={"rows": 4}))

    def __init__(self, *args, study: Study, test: WeatTest | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.study, self.test, self.draft = study, test, None
        for name in SETS:
            self.fields[name].max_length = 40_000
            self.fields[
                name
            ].help_text = (
                f"{WORDS_HELP} At least {MIN_WORDS[name]}, at most {weat_tests.MAX_WORDS}."
            )
            self.fields[name].error_messages["required"] = (
                f"{SET_LABELS[name]} is empty: add at least {MIN_WORDS[name]} words."
            )

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.draft = weat_tests.weat_draft(
                study=self.study,
                name=data["name"],
                kind=data["kind"],
                names={f: data[f] for f in weat_tests.NAME_FIELDS},
                words={s: data[s] for s in SETS},
                test=self.test,
            )
        except WeatInputError as error:
            self.add_error(error.field if error.field in self.fields else None, error.message)
        return data

    @property
    def set_fields(self):
        """(label, name field, words field) of each set, for the template."""
        return [
            (SET_LABELS[s], self[s.replace("words", "name")], self[s], s[0].upper()) for s in SETS
        ]


def draft_initial(draft: weat_tests.WeatDraft) -> dict:
    """The form's fields from a checked draft: only the words found."""
    return {
        "name": draft.name,
        "kind": draft.kind,
        **draft.names,
        **{s: "\n".join(ws) for s, ws in draft.words.items()},
    }


def _admin_study(request: HttpRequest, study_id: int) -> Study:
    study = study_get(request.user, study_id, Action.MANAGE, message=weat_tests.MANAGE_REFUSED)
    weat_tests.require_weat(study)
    return study


def _test_page(request: HttpRequest, study: Study, test: WeatTest | None) -> HttpResponse:
    if request.method == "POST":
        form = WeatTestForm(request.POST, study=study, test=test)
    elif test is not None:
        form = WeatTestForm(initial=_test_initial(test), study=study, test=test)
    else:
        form = WeatTestForm(study=study)
    preview = None
    if request.method == "POST" and form.is_valid():
        draft = form.draft
        if request.POST.get("action") == "save":
            saved = weat_tests.weat_test_save(
                user=request.user, study=study, draft=draft, test=test
            )
            note = (
                f" Not in the space, so not added: {', '.join(draft.unknown_words)}."
                if draft.unknown_words
                else ""
            )
            messages.success(
                request,
                f"WEAT test “{saved.name}” saved. Its results under the Euclidean metric and "
                f"each version are being computed.{note}",
            )
            return redirect("learning:study-weat", study.pk)
        preview = weat_tests.weat_preview(study=study, draft=draft)
        form = WeatTestForm(initial=draft_initial(draft), study=study, test=test)
        form.draft = draft
    context = {
        "study": study,
        "active": "weat",
        "form": form,
        "test": test,
        "preview": preview,
        "unknown": [
            (SET_LABELS[s], ws) for s, ws in (form.draft.unknown if form.draft else {}).items()
        ],
        "items_url": reverse("api-items"),
        "preview_permutations": weat_tests.PREVIEW_PERMUTATIONS,
    }
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "learning/weat_test_form.html", context, status=status)


def _test_initial(test: WeatTest) -> dict:
    return {
        "name": test.name,
        "kind": test.kind,
        **{f: getattr(test, f) for f in weat_tests.NAME_FIELDS},
        **{s: "\n".join(getattr(test, s)) for s in SETS},
    }


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def weat_test_new(request: HttpRequest, study_id: int) -> HttpResponse:
    """A new test: the form, its preview (POST ``action=preview``), save (``action=save``)."""
    study = _admin_study(request, study_id)
    return _test_page(request, study, None)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def weat_test_edit(request: HttpRequest, study_id: int, test_id: int) -> HttpResponse:
    """A test of the study's own suite, changed (its results are computed again)."""
    study = _admin_study(request, study_id)
    return _test_page(request, study, weat_tests.own_test(study, test_id))


@login_required
@require_POST
def weat_test_delete(request: HttpRequest, study_id: int, test_id: int) -> HttpResponse:
    study = _admin_study(request, study_id)
    name = weat_tests.weat_test_delete(user=request.user, study=study, test_id=test_id)
    messages.success(request, f"WEAT test “{name}” deleted with its results.")
    return redirect("learning:study-weat", study.pk)
