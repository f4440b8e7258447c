from django.contrib import admin

from .models import EmbeddingImport, EmbeddingSpace, Item, Tag


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "dimension", "item_count", "owner", "sha256", "created_at"]
    list_filter = ["kind", "shared_with_study_admins"]
    search_fields = ["name", "source"]
    readonly_fields = ["sha256", "item_count", "created_at", "feature_map", "hidden_columns"]
    raw_id_fields = ["owner"]
    filter_horizontal = ["shared_with"]
    list_select_related = ["owner"]


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["key", "space", "kind", "row"]
    list_filter = ["space", "kind"]
    search_fields = ["key"]
    raw_id_fields = ["space"]
    filter_horizontal = ["tags"]
    list_select_related = ["space"]
    show_full_result_count = False


@admin.register(EmbeddingImport)
class EmbeddingImportAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "format",
        "status",
        "stage",
        "progress_rows",
        "total_rows",
        "created_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "format"]
    search_fields = ["name", "original_name", "error"]
    raw_id_fields = ["space", "created_by"]
    list_select_related = ["created_by"]
