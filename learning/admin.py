from django.contrib import admin, messages

from common.errors import AppError
from learning.models import (
    AuditSettings,
    AuditViolation,
    CohortReport,
    MetricVersion,
    ModelAudit,
    RefitState,
    StudyLearningSettings,
    WeatResult,
    WeatSuite,
    WeatTest,
)
from learning.refits.scheduling import refit_request
from learning.versions.storage import metric_version_publish


@admin.register(MetricVersion)
class MetricVersionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "study",
        "method",
        "label",
        "status",
        "is_published",
        "verdict",
        "judgment_watermark",
        "group_watermark",
        "fit_seconds",
        "created_at",
    ]
    list_filter = ["study", "method", "status", "is_published", "verdict"]
    search_fields = ["label", "sigma_sha256"]
    raw_id_fields = ["parent"]
    # Publishing goes through the "Publish" action (learning.refits.service), never a form field.
    readonly_fields = [
        "sigma_sha256",
        "created_at",
        "status",
        "is_published",
        "published_at",
        "published_by",
        "fingerprint",
        "transient",
        "informative",  # the rule's (learning/evaluation/informative.py), never edited by hand
        "publish_override",  # recorded by publishing with a reason (learning/versions/storage.py)
    ]
    actions = ["publish_version"]

    # A version that is not informative needs a reason: the version page asks for one; here the
    # action is refused with the verdict (learning/versions/storage.py: version_publish).
    @admin.action(description="Publish the selected version (replaces the published one)")
    def publish_version(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to publish.", messages.ERROR)
            return
        version = queryset.get()
        try:
            metric_version_publish(version=version, user=request.user)
        except AppError as error:
            self.message_user(request, error.message, messages.ERROR)
            return
        self.message_user(request, f"Published {version}.", messages.SUCCESS)


@admin.register(StudyLearningSettings)
class StudyLearningSettingsAdmin(admin.ModelAdmin):
    list_display = [
        "study",
        "repeat_policy",
        "debounce_seconds",
        "fit_explore",
        "fit_face",
        "weight_by_reliability",
        "auto_publish",
    ]
    raw_id_fields = ["study"]
    filter_horizontal = ["excluded_annotators"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # Changed settings change the fit's input; queued after the admin's transaction
        # commits, so the excluded annotators saved with the form are included.
        refit_request(study_id=obj.study_id)


@admin.register(RefitState)
class RefitStateAdmin(admin.ModelAdmin):
    list_display = [
        "study",
        "due_at",
        "lease_until",
        "last_started_at",
        "last_finished_at",
        "last_outcome",
    ]
    readonly_fields = [
        "study",
        "due_at",
        "lease_token",
        "lease_until",
        "last_started_at",
        "last_finished_at",
        "last_outcome",
    ]

    def has_add_permission(self, request):
        return False


class WeatTestInline(admin.StackedInline):
    model = WeatTest
    extra = 0


@admin.register(WeatSuite)
class WeatSuiteAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]
    inlines = [WeatTestInline]
    filter_horizontal = ["studies"]


@admin.register(WeatResult)
class WeatResultAdmin(admin.ModelAdmin):
    list_display = ["test", "metric", "p_value", "effect_size", "exact", "created_at"]
    list_filter = ["metric", "exact", "test__suite"]
    raw_id_fields = ["test", "metric_version"]
    search_fields = ["test__name", "metric"]
    list_select_related = ["test"]


@admin.register(WeatTest)
class WeatTestAdmin(admin.ModelAdmin):
    list_display = ["name", "suite", "kind", "position", "x_name", "y_name", "a_name", "b_name"]
    list_filter = ["suite", "kind"]
    search_fields = ["name", "x_name", "y_name", "a_name", "b_name"]
    list_select_related = ["suite"]


class AuditViolationInline(admin.TabularInline):
    model = AuditViolation
    extra = 0
    can_delete = False
    fields = ["rank", "key_a", "key_b", "gap", "needed", "distance", "asked_at"]
    readonly_fields = fields
    show_change_link = True
    max_num = 0


@admin.register(ModelAudit)
class ModelAuditAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "study",
        "version",
        "status",
        "item_count",
        "violation_count",
        "created_at",
    ]
    list_filter = ["status"]
    list_select_related = ["study", "version"]
    search_fields = ["name", "study__name", "original_name"]
    raw_id_fields = ["study", "version", "created_by"]
    readonly_fields = ["summary", "lease_until", "started_at", "finished_at", "seconds"]
    inlines = [AuditViolationInline]


@admin.register(AuditViolation)
class AuditViolationAdmin(admin.ModelAdmin):
    list_display = ["audit", "rank", "key_a", "key_b", "gap", "needed", "asked_at"]
    list_select_related = ["audit"]
    search_fields = ["key_a", "key_b", "audit__name"]
    raw_id_fields = ["audit", "item_a", "item_b"]


@admin.register(AuditSettings)
class AuditSettingsAdmin(admin.ModelAdmin):
    """A record study's sensitive columns, declared by its admins on the audits page."""

    list_display = ["study", "sensitive_columns"]
    search_fields = ["study__name"]
    list_select_related = ["study"]


@admin.register(CohortReport)
class CohortReportAdmin(admin.ModelAdmin):
    """The comparison of a study's cohorts for one attribute (learning/cohorts/): read-only."""

    list_display = ["id", "study", "attribute", "judgment_watermark", "created_at"]
    search_fields = ["attribute", "study__name"]
    list_select_related = ["study"]
    readonly_fields = [f.name for f in CohortReport._meta.fields]
