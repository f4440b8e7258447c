from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        """Connect the audit and cache receivers; give accounts the rule for who may hold API
        tokens (``accounts.hooks``)."""
        from accounts import hooks
        from annotation import facts  # noqa: F401 - its receivers
        from annotation.access import may_export, token_studies
        from annotation.setup import member_audit  # noqa: F401 - its receivers

        hooks.provide_token_rule(may_export, token_studies)
