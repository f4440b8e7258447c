from django import forms
from django.contrib import admin
from django.db import models

from .models import (
    Adjudication,
    CandidatePair,
    ComparableGroup,
    FeedbackImport,
    GoldPair,
    GroupEdit,
    MemberAttribute,
    Membership,
    PairComment,
    PairJudgment,
    PairSkip,
    Study,
    StudyCounter,
    Webhook,
    WebhookDelivery,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ["user"]
    extra = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "space", "mode", "strategy", "overlap", "is_active", "created_at"]
    list_filter = ["mode", "strategy", "is_active"]
    search_fields = ["name"]
    inlines = [MembershipInline]
    filter_horizontal = ["pool_tags"]
    raw_id_fields = ["pool_keys"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "study", "role", "created_at"]
    list_filter = ["role", "study"]
    search_fields = ["user__username", "study__name"]
    raw_id_fields = ["user"]


@admin.register(PairJudgment)
class PairJudgmentAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "item_a", "item_b", "label", "annotator", "source", "created_at"]
    list_filter = ["study", "label", "source", "is_gold"]
    search_fields = ["item_a__key", "item_b__key", "annotator__username", "client_id"]
    raw_id_fields = ["item_a", "item_b", "annotator"]
    list_select_related = ["study", "item_a", "item_b", "annotator"]
    show_full_result_count = False


class GoldPairForm(forms.ModelForm):
    """Accepts the two items in any order and stores the pair canonically (a < b); the model's
    ``clean`` refuses items outside the study's pool (another space included)."""

    class Meta:
        model = GoldPair
        fields = ["study", "item_a", "item_b", "label"]

    def clean(self):
        data = super().clean()
        a, b = data.get("item_a"), data.get("item_b")
        if a and b and a.pk > b.pk:
            data["item_a"], data["item_b"] = b, a
        return data


@admin.register(GoldPair)
class GoldPairAdmin(admin.ModelAdmin):
    list_display = ["study", "item_a", "item_b", "label"]
    list_filter = ["study", "label"]
    raw_id_fields = ["item_a", "item_b"]
    form = GoldPairForm


class CandidatePairForm(GoldPairForm):
    class Meta:
        model = CandidatePair
        fields = ["study", "item_a", "item_b"]


@admin.register(CandidatePair)
class CandidatePairAdmin(admin.ModelAdmin):
    list_display = ["study", "item_a", "item_b"]
    list_filter = ["study"]
    raw_id_fields = ["item_a", "item_b"]
    form = CandidatePairForm


@admin.register(ComparableGroup)
class ComparableGroupAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "created_by", "source", "revision", "updated_at"]
    list_filter = ["study", "source"]
    search_fields = ["name"]
    raw_id_fields = ["members", "created_by"]


@admin.register(GroupEdit)
class GroupEditAdmin(admin.ModelAdmin):
    list_display = ["group", "action", "item", "user", "revision", "created_at"]
    list_filter = ["action"]
    raw_id_fields = ["group", "item", "user"]


@admin.register(StudyCounter)
class StudyCounterAdmin(admin.ModelAdmin):
    """The group-revision watermark refits compare; maintained by the services, read-only."""

    list_display = ["study", "group_revision"]
    search_fields = ["study__name"]
    readonly_fields = ["study", "group_revision"]

    def has_add_permission(self, request):
        return False


@admin.register(PairSkip)
class PairSkipAdmin(admin.ModelAdmin):
    list_display = ["study", "annotator", "item_a", "item_b", "created_at"]
    list_filter = ["study"]
    search_fields = ["annotator__username", "item_a__key", "item_b__key"]
    raw_id_fields = ["annotator", "item_a", "item_b"]


@admin.register(PairComment)
class PairCommentAdmin(admin.ModelAdmin):
    list_display = ["study", "author", "item_a", "item_b", "text", "created_at"]
    list_filter = ["study"]
    search_fields = ["text", "author__username", "item_a__key", "item_b__key"]
    raw_id_fields = ["author", "item_a", "item_b"]


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    """Decisions on disagreements (made on the review pages; the fit reads them)."""

    list_display = ["study", "item_a", "item_b", "label", "decided_by", "created_at"]
    list_filter = ["label"]
    list_select_related = ["study", "item_a", "item_b", "decided_by"]
    search_fields = ["study__name", "item_a__key", "item_b__key", "decided_by__username"]
    raw_id_fields = ["study", "item_a", "item_b", "decided_by"]


@admin.register(FeedbackImport)
class FeedbackImportAdmin(admin.ModelAdmin):
    """The import page's feedback imports (read-only: the worker stores them)."""

    list_display = [
        "id",
        "study",
        "name",
        "status",
        "judgments",
        "groups",
        "created_by",
        "created_at",
    ]
    list_filter = ["status"]
    search_fields = ["name", "study__name", "token"]
    list_select_related = ["study", "created_by"]
    readonly_fields = [f.name for f in FeedbackImport._meta.fields]


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    """A study's webhooks (the secret is shown on the study's webhooks page to its admins)."""

    list_display = ["id", "study", "url", "active", "created_by", "created_at"]
    list_filter = ["active"]
    search_fields = ["url", "study__name"]
    list_select_related = ["study", "created_by"]
    exclude = ["secret"]
    # a URL typed without a scheme is https, as on the study's webhooks page (and Django 6's
    # default)
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """Each event sent to a webhook: read-only, the log of its attempts."""

    list_display = ["id", "event", "webhook", "status", "attempts", "response_status", "created_at"]
    list_filter = ["status", "event"]
    search_fields = ["webhook__url", "delivery_id"]
    list_select_related = ["webhook"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]


@admin.register(MemberAttribute)
class MemberAttributeAdmin(admin.ModelAdmin):
    """A study's member attributes (cohorts: docs/cohorts.md); members' values are on
    ``Membership.attributes``."""

    list_display = ["id", "study", "name", "values", "ask", "created_at"]
    list_filter = ["ask"]
    search_fields = ["name", "study__name"]
    list_select_related = ["study"]
