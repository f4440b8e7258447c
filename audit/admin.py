from django.contrib import admin

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: events are written by the actions themselves, never by hand."""

    list_display = ["created_at", "actor_name", "action", "target_type", "target_id", "study", "ip"]
    list_filter = ["action", "study", "target_type", ("actor", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["actor_name", "target_id", "ip"]
    list_select_related = ["study"]
    date_hierarchy = "created_at"
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
