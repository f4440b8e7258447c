"""Forms of the annotation pages (the labelling and group pages talk to the JSON API)."""

from __future__ import annotations

from django import forms

from .models import Label, Source


class ReviewFilterForm(forms.Form):
    """Filters of the reviewer's judgment table; every field optional."""

    annotator = forms.CharField(required=False, max_length=150)
    label = forms.ChoiceField(required=False, choices=[("", "any label"), *Label.choices])
    source = forms.ChoiceField(required=False, choices=[("", "any source"), *Source.choices])
    before = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
