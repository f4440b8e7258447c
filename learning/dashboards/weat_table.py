"""The WEAT table of a study: its tests, the versions shown as columns, their results (a handful
of queries whatever the number of versions), and which tests crossed the significance line."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from annotation.models import Study
from learning.models import MetricVersion, WeatResult, WeatTest

SIGNIFICANCE = 0.05
LATEST_PER_METHOD = 3  # WEAT table columns per method unless all versions are asked for


def study_tests(study: Study) -> list[WeatTest]:
    tests = WeatTest.objects.filter(suite__studies=study).select_related("suite").distinct()
    return sorted(
        tests, key=lambda t: (t.kind != WeatTest.Kind.MEANINGFUL, t.suite.name, t.position)
    )


def table_versions(study: Study, *, show_all: bool) -> tuple[list[MetricVersion], int]:
    """Columns: published versions and the latest ready ones per method (or all); hidden count."""
    versions = list(MetricVersion.objects.ready().filter(study=study).order_by("method", "-pk"))
    if show_all:
        return sorted(versions, key=lambda v: (v.method, v.pk)), 0
    kept, per_method = [], {}
    for version in versions:
        per_method[version.method] = per_method.get(version.method, 0) + 1
        if version.is_published or per_method[version.method] <= LATEST_PER_METHOD:
            kept.append(version)
    return sorted(kept, key=lambda v: (v.method, v.pk)), len(versions) - len(kept)


def weat_results(study: Study, tests, versions) -> dict[tuple[int, int | None], WeatResult]:
    """{(test id, version id or None for Euclidean): result} in one query."""
    results = WeatResult.objects.filter(test__in=[t.pk for t in tests]).filter(
        Q(metric_version__in=[v.pk for v in versions])
        | Q(metric_version__isnull=True, space_id=study.space_id)
    )
    return {(r.test_id, r.metric_version_id): r for r in results}


@dataclass
class WeatTable:
    columns: list[tuple[str, MetricVersion | None]]  # (heading, version; None = Euclidean)
    rows: list[tuple[WeatTest, list[WeatResult | None]]]
    hidden: int


def weat_table(study: Study, *, show_all: bool = False) -> WeatTable:
    tests = study_tests(study)
    versions, hidden = table_versions(study, show_all=show_all)
    found = weat_results(study, tests, versions)
    columns = [("Euclidean", None)] + [(v.label or v.method, v) for v in versions]
    rows = [
        (test, [found.get((test.pk, v.pk if v else None)) for _, v in columns]) for test in tests
    ]
    return WeatTable(columns=columns, rows=rows, hidden=hidden)


def crossings(before: dict[int, WeatResult], after: dict[int, WeatResult]) -> list[str]:
    """Tests whose p-value moved across the significance line between two versions."""
    messages = []
    for test_id, new in after.items():
        old = before.get(test_id)
        if old is None or (old.p_value < SIGNIFICANCE) == (new.p_value < SIGNIFICANCE):
            continue
        verb = "became significant" if new.p_value < SIGNIFICANCE else "lost significance"
        messages.append(
            f"WEAT “{new.test.name}” {verb}: p {old.p_value:.3g} → {new.p_value:.3g} "
            f"(d {old.effect_size:+.2f} → {new.effect_size:+.2f})."
        )
    return messages
