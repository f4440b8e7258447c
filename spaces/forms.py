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
