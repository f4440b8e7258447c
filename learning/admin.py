from django.contrib import admin

from .models import MetricVersion, WeatResult, WeatSuite, WeatTest


@admin.register(MetricVersion)
class MetricVersionAdmin(admin.ModelAdmin):
    list_display = [
        "id", "study", "method", "label", "status", "is_published", "judgment_watermark",
        "group_watermark", "fit_seconds", "created_at",
    ]
    list_filter = ["study", "method", "status", "is_published"]
    search_fields = ["label", "sigma_sha256"]
    raw_id_fields = ["parent"]
    readonly_fields = ["sigma_sha256", "created_at"]


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
