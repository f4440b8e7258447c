"""Reads of metric versions: latest ready, live, published, current; a study's learning settings."""

from __future__ import annotations

from django.db.models import QuerySet

from learning.models import MetricVersion, StudyLearningSettings


def learning_settings_get(*, study_id: int) -> StudyLearningSettings:
    """The study's learning settings, created with defaults on first use."""
    found, _ = StudyLearningSettings.objects.get_or_create(study_id=study_id)
    return found


def live_versions(*, study_id: int) -> QuerySet[MetricVersion]:
    """Versions that count as "this input was handled": ready, fitting, or failed for good.

    A failure marked ``transient`` (an interrupted fit, a database outage) is retried.
    """
    return MetricVersion.objects.filter(study_id=study_id, transient=False)


def version_exists_for(
    *,
    study_id: int,
    method: str,
    judgment_watermark: int,
    group_watermark: int | None,
    fingerprint: str,
) -> bool:
    """A live version for this input exists (``group_watermark=None``: groups not used)."""
    queryset = live_versions(study_id=study_id).filter(
        method=method, judgment_watermark=judgment_watermark, fingerprint=fingerprint
    )
    if group_watermark is not None:
        queryset = queryset.filter(group_watermark=group_watermark)
    return queryset.exists()


def version_latest_ready(*, study_id: int, method: str) -> MetricVersion | None:
    """The study's newest ready version of ``method``."""
    return (
        MetricVersion.objects.ready()
        .filter(study_id=study_id, method=method)
        .order_by("-id")
        .first()
    )


def version_latest_live(*, study_id: int, method: str) -> MetricVersion | None:
    """The study's newest version of ``method`` that counts as handled (not a transient failure)."""
    return live_versions(study_id=study_id).filter(method=method).order_by("-id").first()


def version_published(*, study_id: int, method: str) -> MetricVersion | None:
    """The study's published version of ``method`` (with its study and space)."""
    return (
        MetricVersion.objects.published()
        .select_related("study", "study__space")
        .filter(study_id=study_id, method=method)
        .first()
    )


def version_current(*, study_id: int, method: str | None = None) -> MetricVersion | None:
    """The study's current metric, for sampling, suggestions and audits: among its ready
    versions judged informative for new people (``verdict``; ``learning/evaluation/
    informative.py``: never by default, and lost when the answers after it disagree), the published one
    of any method, else the newest; with ``method``, the newest informative one of it."""
    ready = MetricVersion.objects.ready().filter(study_id=study_id, informative=True)
    if method is not None:
        return ready.filter(method=method).order_by("-id").first()
    return ready.order_by("-is_published", "-id").first()
