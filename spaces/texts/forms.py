"""The text upload form (admins)."""

from __future__ import annotations

from django import forms

from spaces.forms import TableUploadForm


class TextUploadForm(TableUploadForm):
    text_column = forms.CharField(
        max_length=200, initial="text", help_text="The field that holds each text."
    )
    key_column = forms.CharField(
        max_length=200,
        required=False,
        help_text="Optional: a field with a unique key per text (else text 1, text 2, …).",
    )
