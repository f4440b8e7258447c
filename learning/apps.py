from django.apps import AppConfig


class LearningConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "learning"
    verbose_name = "Learning"

    def ready(self) -> None:
        """Register with the layer below: refit after feedback changes, the current metric and
        the drift flag's watch for its sampler (``annotation.hooks``); a deleted study's refit
        caches removed."""
        from django.db.models.signals import post_delete

        from annotation import hooks
        from annotation.models import Study
        from learning.refits import cache, scheduling
        from learning.versions import drift, sigmas

        hooks.on_feedback_changed(scheduling.refit_request)
        hooks.provide_metric(sigmas.study_metric)
        hooks.provide_drift_watch(drift.watching)
        post_delete.connect(
            cache.study_cache_forget, sender=Study, dispatch_uid="learning-study-cache"
        )
