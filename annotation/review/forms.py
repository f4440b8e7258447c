"""Forms of the review page (its answer filters) and of the adjudication page (its pair
filters, a decision)."""

from __future__ import annotations

import re

from django import forms

from annotation.models import Label, Source
from annotation.review.selectors import Agreement
from annotation.serializers import MAX_ID

PAIR_REF = re.compile(r"^(\d{1,18})-(\d{1,18})$")


def _annotator_field() -> forms.TypedChoiceField:
    return forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Answered by")


def _annotator_choices(annotators) -> list:
    return [("", "anyone"), *((u.pk, u.username) for u in annotators)]


class AnswerFilterForm(forms.Form):
    """Filters of the review page's answer table; every field optional."""

    annotator = _annotator_field()
    label = forms.ChoiceField(required=False, choices=[("", "any label"), *Label.choices])
    source = forms.ChoiceField(required=False, choices=[("", "any source"), *Source.choices])
    before = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args, annotators=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotator"].choices = _annotator_choices(annotators)


class PairFilterForm(forms.Form):
    """Which shared pairs the adjudication page lists; every field optional."""

    agreement = forms.ChoiceField(
        required=False, choices=Agreement.CHOICES, label="Show", initial=Agreement.OPEN
    )
    annotator = _annotator_field()
    label = forms.ChoiceField(
        required=False, choices=[("", "any label"), *Label.choices], label="With an answer"
    )
    pair = forms.RegexField(required=False, regex=PAIR_REF, widget=forms.HiddenInput)

    def __init__(self, *args, annotators=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotator"].choices = _annotator_choices(annotators)

    def clean_agreement(self) -> str:
        return self.cleaned_data["agreement"] or Agreement.OPEN

    def clean_pair(self) -> tuple[int, int] | None:
        found = PAIR_REF.match(self.cleaned_data["pair"] or "")
        if not found:
            return None
        a, b = int(found[1]), int(found[2])
        return (a, b) if a < b else (b, a)


class DecisionForm(forms.Form):
    """One decision: the pair, its label (or ``reopen`` to take the decision back)."""

    item_a = forms.IntegerField(min_value=1, max_value=MAX_ID, widget=forms.HiddenInput)
    item_b = forms.IntegerField(min_value=1, max_value=MAX_ID, widget=forms.HiddenInput)
    label = forms.ChoiceField(
        choices=[
            (Label.COMPARABLE, "comparable"),
            (Label.INCOMPARABLE, "incomparable"),
            ("reopen", "take the decision back"),
        ]
    )
    gold = forms.BooleanField(required=False, label="Also make it a gold pair")
