"""The embedding upload form (admins)."""

from __future__ import annotations

from django import forms
from django.conf import settings

from spaces.models import Item
from spaces.vectors.formats import FORMATS


class EmbeddingUploadForm(forms.Form):
    file = forms.FileField(
        help_text="word2vec / GloVe text (optionally .gz), word2vec .bin, .npy or .csv"
    )
    name = forms.CharField(max_length=200, help_text="Name of the new space (unique).")
    format = forms.ChoiceField(
        choices=[("auto", "detect")] + [(f, f) for f in FORMATS], initial="auto"
    )
    extra_file = forms.FileField(
        required=False,
        label="Second file",
        help_text="npy: the vocabulary (one key per line). csv records: a .npy with one "
        "vector per data row.",
    )
    kind = forms.ChoiceField(choices=[("", "automatic")] + list(Item.Kind.choices), required=False)
    tags = forms.CharField(
        required=False, max_length=500, help_text="Comma-separated tags given to every item."
    )
    limit = forms.IntegerField(  # (at most the column's range: a larger one is a form error)
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        help_text="Import only the first N vectors.",
    )

    def clean(self):
        data = super().clean()
        limit = settings.MAX_UPLOAD_MB * 1024 * 1024
        for field in ("file", "extra_file"):
            upload = data.get(field)
            if upload is not None and upload.size > limit:
                self.add_error(field, f"The file is larger than {settings.MAX_UPLOAD_MB} MB.")
        return data

    def tag_list(self) -> list[str]:
        raw = self.cleaned_data.get("tags") or ""
        return [t.strip()[:100] for t in raw.split(",") if t.strip()]
