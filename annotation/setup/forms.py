"""Forms of the set-up pages: a study's settings, the uploads, duplicate, members."""

from __future__ import annotations

from django import forms

from annotation.access import usable_spaces
from annotation.models import MAX_OVERLAP, MAX_TARGET, Membership, Study
from annotation.setup.studies import NEW_STUDY_DEFAULTS, STUDY_FIELDS
from spaces.models import EmbeddingSpace, Tag


class TagSelect(forms.SelectMultiple):
    """Tags, each option marked with the spaces whose items carry it (``data-spaces``): the page
    shows only the chosen space's tags."""

    spaces_of: dict[int, str] = {}

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        key = getattr(value, "value", value)
        option["attrs"]["data-spaces"] = self.spaces_of.get(key, "")
        return option


class StudyForm(forms.ModelForm):
    """New study / edit study: the settings; the service checks the rules again."""

    tags = forms.ModelMultipleChoiceField(
        queryset=Tag.objects.all(),
        required=False,
        help_text="For a pool of items with given tags (the tags of the chosen space).",
        widget=TagSelect(attrs={"size": 6}),
    )

    class Meta:
        model = Study
        fields = STUDY_FIELDS
        labels = {
            "overlap": "Overlap k",
            "target_per_annotator": "Target answers per annotator",
            "stop_at_target": "Stop annotators at the target (completion screen)",
            "is_active": "Open (takes answers)",
            "pool": "Item pool",
            "candidate_rate": "Share of uploaded candidate pairs",
        }
        widgets = {"instructions": forms.Textarea(attrs={"rows": 10, "data-preview": "1"})}
        help_texts = {
            "pool": "All items of the space, the items with given tags, or a list of keys you "
            "upload on the Items page.",
            "target_per_annotator": "Answers each annotator is asked for (their progress bar).",
            "candidate_rate": "While uploaded candidate pairs are left, this share of the pairs "
            "comes from them and the rest from the strategy (1: all candidates first).",
            "strategy": "The active-learning strategies pick pairs uniformly until a metric "
            "version is judged informative for new people (stratified: by plain distances "
            "until then). Every strategy but random picks only a quarter of the pairs itself: "
            "three quarters are uniform control pairs, which the drift flag and the validity "
            "checks read. The study dashboard shows how many labels each strategy needed in "
            "simulated studies.",
        }

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the spaces the user may use (annotation.access.usable_spaces), and the study's
        # own: a space not shared with them is not offered, and posting its id is a form error.
        spaces = usable_spaces(user)
        if self.instance.pk:
            spaces = spaces | EmbeddingSpace.objects.filter(pk=self.instance.space_id)
        self.fields["space"].queryset = spaces.order_by("name")
        self.fields["overlap"].widget.attrs.update(min=1, max=MAX_OVERLAP)
        self.fields["target_per_annotator"].widget.attrs.update(min=1, max=MAX_TARGET)
        self.fields["gold_rate"].widget.attrs.update(min=0, max=1, step="0.01")
        self.fields["candidate_rate"].widget.attrs.update(min=0, max=1, step="0.01")
        self.fields["candidate_rate"].required = False
        if self.instance.pk:
            self.initial.setdefault("tags", list(self.instance.pool_tags.all()))
        else:
            for field, value in NEW_STUDY_DEFAULTS.items():
                self.initial.setdefault(field, value)
        self.fields["tags"].widget = TagSelect(attrs={"size": 6})
        self.fields["tags"].widget.spaces_of = tag_spaces()

    def clean_gold_rate(self):
        value = self.cleaned_data["gold_rate"]
        if value is not None and not 0 <= value <= 1:
            raise forms.ValidationError("The gold rate is between 0 and 1.")
        return value

    def clean_candidate_rate(self):
        value = self.cleaned_data["candidate_rate"]
        if value is None:  # left out: as it is (new: all candidate pairs first)
            return self.instance.candidate_rate
        if not 0 <= value <= 1:
            raise forms.ValidationError("The share of candidate pairs is between 0 and 1.")
        return value

    def clean_overlap(self):
        value = self.cleaned_data["overlap"]
        if value is not None and not 1 <= value <= MAX_OVERLAP:
            raise forms.ValidationError(f"Overlap k is between 1 and {MAX_OVERLAP:,}.")
        return value

    def clean_target_per_annotator(self):
        value = self.cleaned_data["target_per_annotator"]
        if value is not None and not 1 <= value <= MAX_TARGET:
            raise forms.ValidationError(f"The target is between 1 and {MAX_TARGET:,} answers.")
        return value

    def clean(self):
        data = super().clean()
        if data.get("pool") == Study.Pool.TAGS and not data.get("tags"):
            self.add_error("tags", "Choose at least one tag for a pool of items with given tags.")
        return data

    def validate_unique(self):
        pass  # the service answers a taken name (Conflict), in the form's error list

    def _post_clean(self):
        # Validate the fields only: the service creates or changes the study. The model's
        # validators are not run, so every number has its bounds in a clean_* method above.
        pass


class UploadForm(forms.Form):
    """A file (CSV, TSV, JSONL) or pasted text: the set-up uploads."""

    file = forms.FileField(required=False)
    text = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), label="or paste here"
    )
    replace = forms.BooleanField(required=False, label="Replace instead of adding")

    def clean(self):
        data = super().clean()
        if not data.get("file") and not (data.get("text") or "").strip():
            raise forms.ValidationError("Choose a file or paste some lines.")
        if data.get("file") and (data.get("text") or "").strip():
            raise forms.ValidationError("Either a file or pasted lines, not both.")
        return data


class FeedbackUploadForm(forms.Form):
    """Existing judgments or groups to import: the file and how to read it (the
    ``import_feedback`` command's options)."""

    file = forms.FileField(label="File (CSV, TSV or JSONL)")
    kind = forms.ChoiceField(
        choices=[("auto", "from the columns"), ("pairs", "pair judgments"), ("groups", "groups")],
        initial="auto",
        label="What it holds",
    )
    fmt = forms.ChoiceField(
        choices=[("auto", "from the file name"), ("csv", "CSV"), ("jsonl", "JSON lines")],
        initial="auto",
        label="Format",
    )
    provenance = forms.CharField(
        required=False, max_length=300, label="Where it comes from (default: the file name)"
    )


class DuplicateForm(forms.Form):
    name = forms.CharField(max_length=200)


class MemberAddForm(forms.Form):
    who = forms.CharField(max_length=254, label="Username or e-mail")
    role = forms.ChoiceField(choices=Membership.Role.choices)
    target = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_TARGET, label="Own target (optional)"
    )


class InviteForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, label="E-mail (optional)")
    role = forms.ChoiceField(choices=Membership.Role.choices)
    target = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_TARGET, label="Own target (optional)"
    )


class MemberChangeForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)
    target = forms.IntegerField(required=False, min_value=1, max_value=MAX_TARGET)


def tag_spaces() -> dict[int, str]:
    """Tag id → the ids of the spaces whose items carry it ("1 4"), in one query."""
    found: dict[int, set[int]] = {}
    through = Tag.items.through
    for tag_id, space_id in through.objects.values_list("tag_id", "item__space_id").distinct():
        found.setdefault(tag_id, set()).add(space_id)
    return {tag: " ".join(str(s) for s in sorted(spaces)) for tag, spaces in found.items()}
