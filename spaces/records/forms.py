"""The forms of record spaces (admins): each column's role, and which columns annotators see."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

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
