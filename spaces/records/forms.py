"""The forms of record spaces (admins): each column's role and whether annotators see it (an
upload's columns), and which columns annotators see (an existing space)."""

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


HIDDEN = ":hidden"
# One field per column, its role in φ and whether annotators see it: a table at the column limit
# (TABLE_MAX_COLUMNS, 500) posts 503 fields, within Django's DATA_UPLOAD_MAX_NUMBER_FIELDS (1,000)
# — a role and a box per column made 1,003, and the form could never be sent.
COLUMN_CHOICES = [
    (value, label)
    for role, _ in ROLE_CHOICES
    for value, label in ((role, f"{role}, shown"), (role + HIDDEN, f"{role}, hidden"))
]


NO_LABEL = " none"  # the label choice "the table has no outcome" (column names are stripped)
LABEL_REQUIRED = (
    "No column looks like the outcome: choose the label column, or “none” if the table has "
    "no outcome (a column left numeric or categorical enters φ and is shown to annotators)."
)


class ColumnsForm(forms.Form):
    """Per column of the uploaded table one choice — its role in φ (numeric, categorical,
    excluded) and whether annotators see it ("shown" or "hidden") — then the label column and
    the key column. Every column is shown by default except the guessed label column. When no
    column was recognised as the label (``label_guessed`` false) the admin must choose one, or
    say that there is none (``NO_LABEL``): an outcome such as a wage would otherwise enter φ."""

    def __init__(
        self,
        *args,
        columns: list[str],
        initial_roles: dict,
        hidden: Sequence[str] = (),
        label_guessed: bool = True,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.columns = columns
        either = [("", "— none —")] + [(c, c) for c in columns]
        labels = [(NO_LABEL, "none: the table has no outcome")] + [(c, c) for c in columns]
        if not label_guessed:
            labels = [("", "— choose —")] + labels
        self.fields["label_column"] = forms.ChoiceField(
            choices=labels,
            required=not label_guessed,
            error_messages={"required": LABEL_REQUIRED},
            help_text="Never part of φ (e.g. the outcome).",
        )
        self.fields["key_column"] = forms.ChoiceField(
            choices=either,
            required=False,
            help_text="Unique per record; without one, items are row 1, row 2, …",
        )
        for i, column in enumerate(columns):
            role = initial_roles.get(column, "excluded")
            self.fields[f"col_{i}"] = forms.ChoiceField(
                choices=COLUMN_CHOICES,
                label=column,
                initial=role + HIDDEN if column in hidden else role,
                widget=forms.Select(attrs={"data-column": column}),
            )

    def label(self) -> str:
        """The chosen label column, "" for none."""
        chosen = self.cleaned_data["label_column"]
        return "" if chosen == NO_LABEL else chosen

    def column_fields(self):
        return [self[f"col_{i}"] for i in range(len(self.columns))]

    def roles(self) -> dict[str, str]:
        return {
            c: self.cleaned_data[f"col_{i}"].removesuffix(HIDDEN)
            for i, c in enumerate(self.columns)
        }

    def hidden_columns(self) -> list[str]:
        return [
            c for i, c in enumerate(self.columns) if self.cleaned_data[f"col_{i}"].endswith(HIDDEN)
        ]


class ShownColumnsForm(ShownColumns, forms.Form):
    """Whether annotators see each column of an existing record space."""

    def __init__(self, *args, columns: list[str], hidden: Sequence[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.columns = columns
        self.add_shown_fields(hidden)
