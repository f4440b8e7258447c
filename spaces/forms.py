"""The upload form every table shares (admins): records and texts."""

from __future__ import annotations

from django import forms
from django.conf import settings


class TableUploadForm(forms.Form):
    """Records (CSV or Parquet) or texts (CSV with a text column, or JSONL)."""

    file = forms.FileField()
    name = forms.CharField(max_length=200, help_text="Name of the new space (unique).")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.MAX_TABLE_MB * 1024 * 1024:
            raise forms.ValidationError(f"The file is larger than {settings.MAX_TABLE_MB} MB.")
        return upload


class SharingForm(forms.Form):
    """Who may use a space besides staff (spaces/sharing.py)."""

    owner = forms.CharField(
        max_length=254,
        required=False,
        help_text="A username or e-mail; empty: staff only (besides the people below).",
    )
    shared_with = forms.CharField(
        required=False,
        max_length=5000,
        label="Shared with",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Usernames or e-mails, separated by commas or spaces: each may attach the "
        "space to the studies they administer and read its items.",
    )
    study_admins = forms.BooleanField(
        required=False, label="Shared with every study admin (anyone who administers a study)"
    )
