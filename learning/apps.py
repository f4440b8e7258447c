from django.apps import AppConfig


class LearningConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "learning"
    verbose_name = "Learning"

    def ready(self) -> None:
        """Register with the layer below: refit after feedback changes, and the current metric
        for its sampler (``annotation.hooks``)."""
        from annotation import hooks
        from learning.refits import scheduling
        from learning.versions import sigmas

        hooks.on_feedback_changed(scheduling.refit_request)
        hooks.provide_metric(sigmas.study_metric)
