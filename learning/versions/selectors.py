"""Reads of metric versions: latest ready, live, published, current; a study's learning settings."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q, QuerySet

from learning.models import MetricVersion, StudyLearningSettings


def learning_settings_get(*, study_id: int) -> StudyLearningSettings:
    """The study's learning settings, created with defaults on first use."""
    found, _ = StudyLearningSettings.objects.get_or_create(study_id=study_id)
    return found


def live_versions(*, study_id: int) -> QuerySet[MetricVersion]:
    """Versions that count as "this input was handled": ready, fitting, or failed for good.

    A failure marked ``transient`` (an interrupted fit, a database outage) is retried.
    """
    return MetricVersion.objects.pooled().filter(study_id=study_id, transient=False)


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
    """The study's newest ready version of ``method`` fitted on every answer (no cohort's)."""
    return (
        MetricVersion.objects.ready()
        .pooled()
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
    of any method, else the newest; with ``method``, the newest informative one of it. A
    cohort's version (``MetricVersion.cohort``) is current only when published."""
    ready = MetricVersion.objects.ready().filter(study_id=study_id, informative=True)
    if method is not None:
        return ready.pooled().filter(method=method).order_by("-id").first()
    ready = ready.filter(Q(cohort="") | Q(is_published=True))
    return ready.order_by("-is_published", "-id").first()


def versions_that_matter(
    *, study_id: int, also: Iterable[int | None] = (), every: bool = False
) -> list[MetricVersion]:
    """The ready versions a menu lists, by method: the published one, the current one (the
    newest informative: ``version_current``), the latest, and the ready versions among ``also``
    (e.g. the page's version's parent) — or, with ``every``, all of them (at most 300). Each
    carries ``menu_tags``: which of published, current, latest it is. A study that fitted 44
    versions in ten minutes listed them all; the rest is now behind an "all versions" link. At
    most three indexed reads a method, whatever the number of versions."""
    ready = MetricVersion.objects.ready().filter(study_id=study_id)
    tags: dict[int, list[str]] = {}
    for method in MetricVersion.Method.values:
        of = ready.filter(method=method)
        for tag, qs in (
            ("published", of.filter(is_published=True)),
            ("current", of.pooled().filter(informative=True)),
            ("latest", of.pooled()),
        ):
            found = qs.order_by("-id").values_list("id", flat=True).first()
            if found is not None:
                tags.setdefault(found, []).append(tag)
    chosen = ready if every else ready.filter(pk__in=set(tags) | {p for p in also if p})
    found = list(
        chosen.only("id", "label", "method", "is_published", "informative", "created_at").order_by(
            "method", "-is_published", "-pk"
        )[:300]
    )
    for version in found:
        version.menu_tags = tags.get(version.pk, [])
    return found
