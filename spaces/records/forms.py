"""The embedding upload form (admins)."""

from __future__ import annotations

from collections.abc import Sequence

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
    limit = forms.IntegerField(
        required=False, min_value=1, help_text="Import only the first N vectors."
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


class TableUploadForm(forms.Form):
    """Records (CSV or Parquet) or texts (CSV with a text column, or JSONL)."""

    file = forms.FileField()
    name = forms.CharField(max_length=200, help_text="Name of the new space (unique).")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.MAX_TABLE_MB * 1024 * 1024:
            raise forms.ValidationError(f"The file is larger than {settings.MAX_TABLE_MB} MB.")
        return upload


class TextUploadForm(TableUploadForm):
    text_column = forms.CharField(
        max_length=200, initial="text", help_text="The field that holds each text."
    )
    key_column = forms.CharField(
        max_length=200,
        required=False,
        help_text="Optional: a field with a unique key per text (else text 1, text 2, …).",
    )


ROLE_CHOICES = [("numeric", "numeric"), ("categorical", "categorical"), ("excluded", "excluded")]


class ShownColumns:
    """A form's "shown to annotators" box per column (checked unless the column is hidden)."""

    columns: list[str]

    def add_shown_fields(self, hidden: Sequence[str]) -> None:
        for i, column in enumerate(self.columns):
            self.fields[f"shown_{i}"] = forms.BooleanField(
                required=False,
                label=f"Show {column} to annotators",
                initial=column not in hidden,
                widget=forms.CheckboxInput(
                    attrs={"aria-label": f"Show {column} to annotators", "data-shown": column}
                ),
            )

    def shown_fields(self):
        return [self[f"shown_{i}"] for i in range(len(self.columns))]

    def hidden_columns(self) -> list[str]:
        return [c for i, c in enumerate(self.columns) if not self.cleaned_data[f"shown_{i}"]]


class ColumnsForm(ShownColumns, forms.Form):
    """One role per column of the uploaded table, whether annotators see it, the label column
    and the key column. Every column is shown by default except the guessed label column."""

    def __init__(
        self, *args, columns: list[str], initial_roles: dict, hidden: Sequence[str] = (), **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.columns = columns
        either = [("", "— none —")] + [(c, c) for c in columns]
        self.fields["label_column"] = forms.ChoiceField(
            choices=either, required=False, help_text="Never part of φ (e.g. the outcome)."
        )
        self.fields["key_column"] = forms.ChoiceField(
            choices=either,
            required=False,
            help_text="Unique per record; without one, items are row 1, row 2, …",
        )
        for i, column in enumerate(columns):
            self.fields[f"role_{i}"] = forms.ChoiceField(
                choices=ROLE_CHOICES, label=column, initial=initial_roles.get(column, "excluded")
            )
        self.add_shown_fields(hidden)

    def role_fields(self):
        return [self[f"role_{i}"] for i in range(len(self.columns))]

    def roles(self) -> dict[str, str]:
        return {c: self.cleaned_data[f"role_{i}"] for i, c in enumerate(self.columns)}


class ShownColumnsForm(ShownColumns, forms.Form):
    """Whether annotators see each column of an existing record space."""

    def __init__(self, *args, columns: list[str], hidden: Sequence[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.columns = columns
        self.add_shown_fields(hidden)
