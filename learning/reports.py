"""Reads for the metric pages: a version's spectrum and sensitive words, the WEAT table, drift.

A handful of queries per page whatever the number of versions (no query per version or test);
Sigmas are read from their ``.npy`` files and cached in-process by sha256, and drift between
two Sigmas is cached by the pair of sha256s, so a page with 100 versions is computed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from django.db.models import Count, Q

from annotation.models import Label, LabelCode, PairJudgment, Study
from learning import fitting, sigmas, spectra
from learning.models import (
    MetricVersion,
    RefitState,
    StudyLearningSettings,
    WeatResult,
    WeatTest,
)
from learning.selectors import version_published
from learning.sigmas import drift_between, sigma_of
from spaces.models import Item

SIGNIFICANCE = 0.05
LATEST_PER_METHOD = 3  # WEAT table columns per method unless all versions are asked for
DEFAULT_DRIFT_THRESHOLD = StudyLearningSettings._meta.get_field("drift_threshold").default


def drift_threshold(study: Study) -> float:
    found = (
        StudyLearningSettings.objects.filter(study=study)
        .values_list("drift_threshold", flat=True)
        .first()
    )
    return float(DEFAULT_DRIFT_THRESHOLD if found is None else found)


# --- One version ------------------------------------------------------------------------------


@dataclass
class Direction:
    eigenvalue: float
    items: list[tuple[str, float]]  # (item key, cosine with the direction)


@lru_cache(maxsize=128)
def _directions_cached(sigma_path, sigma_sha, space_id, matrix_path, space_sha):
    spec = spectra.spectrum(sigmas.sigma_cached(sigma_path, sigma_sha))
    values, basis = spectra.sensitive_basis(spec)
    dimension = spectra.sensitive_basis(spec, limit=None)[0].size
    matrix = np.load(matrix_path, mmap_mode="r")
    if matrix.shape[1] != basis.shape[0]:
        return dimension, ()
    aligned = spectra.aligned_rows(matrix, basis)
    rows = {row for direction in aligned for row, _ in direction}
    keys = dict(Item.objects.filter(space_id=space_id, row__in=rows).values_list("row", "key"))
    return dimension, tuple(
        Direction(float(value), [(keys.get(row, f"row {row}"), cos) for row, cos in direction])
        for value, direction in zip(values, aligned, strict=True)
    )


def _directions(version: MetricVersion) -> tuple[int, tuple[Direction, ...]]:
    space = version.study.space
    return _directions_cached(
        version.sigma.path, version.sigma_sha256, space.pk, space.matrix.path, space.sha256
    )


def sensitive_directions(version: MetricVersion) -> list[Direction]:
    """The sensitive directions with the vocabulary items most aligned with each (1 query)."""
    return list(_directions(version)[1])


def sensitive_dimension(version: MetricVersion) -> int:
    """The dimension of the whole sensitive subspace (the page shows at most 10 directions)."""
    return _directions(version)[0]


def previous_version(version: MetricVersion) -> MetricVersion | None:
    return (
        MetricVersion.objects.ready()
        .filter(study_id=version.study_id, method=version.method)
        .filter(pk__lt=version.pk)
        .order_by("-pk")
        .first()
    )


def weat_rows_for(versions: list[MetricVersion]) -> dict[int, dict[int, WeatResult]]:
    """{version id: {test id: result}} in one query."""
    found: dict[int, dict[int, WeatResult]] = {v.pk: {} for v in versions}
    results = WeatResult.objects.filter(metric_version__in=[v.pk for v in versions])
    for result in results.select_related("test"):
        found[result.metric_version_id][result.test_id] = result
    return found


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


def version_alerts(version, previous, published, threshold: float, weat) -> list[str]:
    """Alerts for a version: WEAT tests crossing 0.05 vs the previous version, large drift."""
    alerts = [f"Safeguard: {warning}" for warning in version.diagnostics.get("warnings", [])]
    if version.diagnostics.get("evaluation_error"):
        alerts.append(
            f"The evaluation of this version failed: {version.diagnostics['evaluation_error']}"
        )
    if previous is not None:
        alerts += crossings(weat.get(previous.pk, {}), weat.get(version.pk, {}))
    for name, other in (("previous", previous), ("published", published)):
        moved = drift_between(other, version)
        if moved is not None and moved.operator_norm > threshold:
            alerts.append(
                f"Drift from the {name} version #{other.pk}: ‖ΔΣ‖ = "
                f"{moved.operator_norm:.3g} exceeds the study threshold {threshold:.3g}."
            )
    return alerts


@dataclass
class VersionReport:
    version: MetricVersion
    spectrum: list[float]
    directions: list[Direction]
    sensitive_dimension: int
    previous: MetricVersion | None
    published: MetricVersion | None
    drift_previous: spectra.Drift | None
    drift_published: spectra.Drift | None
    weat: list[tuple[WeatTest, WeatResult | None, WeatResult | None]]  # test, euclid, this
    alerts: list[str] = field(default_factory=list)
    threshold: float = DEFAULT_DRIFT_THRESHOLD


def version_report(version: MetricVersion) -> VersionReport:
    ready = version.status == MetricVersion.Status.READY and bool(version.sigma)
    previous = previous_version(version)
    published = version_published(study_id=version.study_id, method=version.method)
    threshold = drift_threshold(version.study)
    weat = weat_rows_for([v for v in (version, previous) if v is not None])
    euclid = {
        r.test_id: r
        for r in WeatResult.objects.filter(
            test_id__in=list(weat[version.pk]),
            metric_version__isnull=True,
            space_id=version.study.space_id,
        )
    }
    tests = sorted((r.test for r in weat[version.pk].values()), key=lambda t: (t.kind, t.position))
    return VersionReport(
        version=version,
        spectrum=[float(v) for v in spectra.spectrum(sigma_of(version)).values] if ready else [],
        directions=sensitive_directions(version) if ready else [],
        sensitive_dimension=sensitive_dimension(version) if ready else 0,
        previous=previous,
        published=published,
        drift_previous=drift_between(previous, version) if ready else None,
        drift_published=drift_between(published, version) if ready else None,
        weat=[(t, euclid.get(t.pk), weat[version.pk].get(t.pk)) for t in tests],
        alerts=version_alerts(version, previous, published, threshold, weat) if ready else [],
        threshold=threshold,
    )


# --- The WEAT table ---------------------------------------------------------------------------


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


# --- Drift over versions ----------------------------------------------------------------------


@dataclass(frozen=True)
class DriftSeries:
    """The drift page's data: per method, chart series (JSON-ready lists, one entry per ready
    version); the published and newest version per method; the WEAT results and tests."""

    series: dict[str, dict]
    published: dict[str, int]
    latest: dict[str, MetricVersion]
    found: dict[tuple[int, int | None], WeatResult]
    tests: list[WeatTest]
    last_drift: dict[str, spectra.Drift | None]  # per method: newest version vs its previous


def drift_series(study: Study) -> DriftSeries:
    """Per method, per ready version: drift to previous and to published, angles, WEAT d, loglik."""
    versions = list(MetricVersion.objects.ready().filter(study=study).order_by("pk"))
    published = {v.method: v for v in versions if v.is_published}
    tests = study_tests(study)
    found = weat_results(study, tests, versions)
    series: dict[str, dict] = {}
    previous: dict[str, MetricVersion] = {}
    last_drift: dict[str, spectra.Drift | None] = {}
    for version in versions:
        method = series.setdefault(
            version.method,
            {
                "ids": [],
                "labels": [],
                "to_previous": [],
                "to_published": [],
                "max_angle": [],
                "heldout_loglik": [],
                "effect_sizes": {t.name: [] for t in tests},
            },
        )
        before = drift_between(previous.get(version.method), version)
        last_drift[version.method] = before
        to_published = drift_between(published.get(version.method), version)
        if version.is_published:
            to_published_value = 0.0
        else:
            to_published_value = to_published.operator_norm if to_published else None
        method["ids"].append(version.pk)
        method["labels"].append(f"#{version.pk} {version.label}".strip())
        method["to_previous"].append(before.operator_norm if before else None)
        method["to_published"].append(to_published_value)
        method["max_angle"].append(before.max_angle_degrees if before else None)
        method["heldout_loglik"].append(version.diagnostics.get("heldout_loglik"))
        for test in tests:
            result = found.get((test.pk, version.pk))
            method["effect_sizes"][test.name].append(result.effect_size if result else None)
        previous[version.method] = version
    return DriftSeries(
        series=series,
        published={m: v.pk for m, v in published.items()},
        latest=previous,
        found=found,
        tests=tests,
        last_drift=last_drift,
    )


def drift_alerts(study: Study, data: DriftSeries) -> list[str]:
    """Alerts about each method's newest version (crossings and drift above the threshold)."""
    threshold = drift_threshold(study)
    alerts = []
    for method, latest in sorted(data.latest.items()):
        ids = data.series[method]["ids"]
        before_id = ids[-2] if len(ids) > 1 else None
        if before_id is not None:
            before = {t.pk: data.found.get((t.pk, before_id)) for t in data.tests}
            after = {t.pk: data.found.get((t.pk, latest.pk)) for t in data.tests}
            alerts += [
                f"{latest.get_method_display()} #{latest.pk}: {message}"
                for message in crossings(
                    {k: v for k, v in before.items() if v}, {k: v for k, v in after.items() if v}
                )
            ]
        for name in ("previous", "published"):
            moved = data.series[method][f"to_{name}"][-1]
            if moved is not None and moved > threshold:
                alerts.append(
                    f"{latest.get_method_display()} #{latest.pk}: ‖ΔΣ‖ to the {name} version = "
                    f"{moved:.3g} exceeds the study threshold {threshold:.3g}."
                )
    return alerts


# --- Refit status (dashboard and drift page) ----------------------------------------------------


@dataclass(frozen=True)
class MethodStatus:
    """Where a method's metric stands: its last good version, a failure since, what it waits
    for (the study's churn settings), and what a young study still lacks."""

    method: str
    name: str
    last_good: MetricVersion | None
    failed: MetricVersion | None  # the newest lasting failure after last_good
    waiting: str = ""
    needs: str = ""


@dataclass(frozen=True)
class AnnotatorReliability:
    """An annotator's flip rate as estimated by the latest EXPLORE version, and its interval."""

    version_id: int
    answers: int
    flip_rate: float | None
    low: float | None
    high: float | None

    @property
    def reliability(self) -> float | None:  # share of answers reported as they are
        return None if self.flip_rate is None else 1.0 - self.flip_rate

    @property
    def interval(self) -> tuple[float, float] | None:  # of the reliability
        return None if self.low is None or self.high is None else (1 - self.high, 1 - self.low)


def annotator_reliability(study: Study) -> dict[int, AnnotatorReliability]:
    """Per annotator id, the reliability the study's latest ready EXPLORE version estimated
    (empty when that version was not weighted); imported answers are under -1."""
    from learning.selectors import version_latest_ready

    version = version_latest_ready(study_id=study.pk, method=MetricVersion.Method.EXPLORE)
    rows = (version.diagnostics or {}).get("reliability") or [] if version else []
    return {
        int(row["annotator"]): AnnotatorReliability(
            version.pk, int(row["answers"]), row["flip_rate"], *row["interval"]
        )
        for row in rows
    }


def refit_status(study: Study) -> list[MethodStatus]:
    """One status per method that has versions or waits (two queries)."""
    newest = {}
    for version in (
        MetricVersion.objects.filter(study=study, transient=False)
        .exclude(status=MetricVersion.Status.FITTING)
        .order_by("id")
        .only("id", "method", "label", "status", "error", "is_published", "created_at", "study")
    ):
        good, failed = newest.get(version.method, (None, None))
        if version.status == MetricVersion.Status.READY:
            newest[version.method] = (version, None)
        else:
            newest[version.method] = (good, version)
    outcome = (
        RefitState.objects.filter(study=study).values_list("last_outcome", flat=True).first() or ""
    )
    waits = {}
    if outcome.startswith("waiting: "):
        for part in outcome.removeprefix("waiting: ").split("; "):
            method, _, reason = part.partition(": ")
            waits[method] = reason
    needs = {MetricVersion.Method.EXPLORE: _explore_needs(study)}
    statuses = []
    for method, name in MetricVersion.Method.choices:
        good, failed = newest.get(method, (None, None))
        need = needs.get(method, "")
        if good is None and failed is None and method not in waits and not need:
            continue
        statuses.append(MethodStatus(method, name, good, failed, waits.get(method, ""), need))
    return statuses


def _explore_needs(study: Study) -> str:
    """What the study's answers still lack for EXPLORE ("" when nothing): one query."""
    counts = dict(
        PairJudgment.objects.filter(study=study, label__in=[Label.COMPARABLE, Label.INCOMPARABLE])
        .values_list("label")
        .annotate(n=Count("id"))
    )
    labels = np.repeat(
        [LabelCode.COMPARABLE, LabelCode.INCOMPARABLE],
        [counts.get(Label.COMPARABLE, 0), counts.get(Label.INCOMPARABLE, 0)],
    )
    shortfall = fitting.explore_shortfall_of(labels)
    return "" if shortfall.ok else f"{shortfall.message}."
