from django.contrib import admin, messages
from django.db import transaction

from .models import ApiToken
from .tokens import token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created by their owners on /account/tokens/; admins can only revoke them."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username"]
    list_select_related = ["user"]
    readonly_fields = [
        "user",
        "name",
        "prefix",
        "key_hash",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        with transaction.atomic():  # one audit event per token revoked
            active = queryset.filter(revoked_at__isnull=True).select_for_update()
            count = sum(token_revoke(token=token, actor=request.user) for token in active)
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
