from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        # Their receivers: the token cache's invalidation, the login throttle's reset; the
        # OpenAPI description of the token scheme.
        from . import login_throttle, schema, tokens  # noqa: F401
