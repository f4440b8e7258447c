"""The drift page: per method, per ready version, the drift to the previous and to the published
version (‖ΔΣ‖ relative to ‖Σ‖; the flags are the worker's, :mod:`learning.versions.drift`), the largest principal angle, WEAT effect sizes and the held-out log-likelihood; alerts
about each method's newest version. Drift is read through :mod:`learning.versions.drift`."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Study
from learning.models import MetricVersion, WeatResult, WeatTest
from learning.versions.drift import Drift, drift_alarm, drift_of, watch_check

from .weat_table import crossings, study_tests, weat_results


@dataclass(frozen=True)
class DriftSeries:
    """The drift page's data: per method, chart series (JSON-ready lists, one entry per ready
    version); the published and newest version per method; the WEAT results and tests."""

    series: dict[str, dict]
    published: dict[str, int]
    latest: dict[str, MetricVersion]
    found: dict[tuple[int, int | None], WeatResult]
    tests: list[WeatTest]
    last_drift: dict[str, Drift | None]  # per method: newest version vs its previous
    last_published_drift: dict[str, Drift | None]  # ... and vs the published version


def drift_series(study: Study) -> DriftSeries:
    """Per method, per ready version: drift to previous and to published, angles, WEAT d, loglik."""
    versions = list(MetricVersion.objects.ready().pooled().filter(study=study).order_by("pk"))
    published = {v.method: v for v in versions if v.is_published}
    tests = study_tests(study)
    found = weat_results(study, tests, versions)
    series: dict[str, dict] = {}
    previous: dict[str, MetricVersion] = {}
    last_drift: dict[str, Drift | None] = {}
    last_published_drift: dict[str, Drift | None] = {}
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
        before = drift_of(version, previous.get(version.method))
        to_published = drift_of(version, published.get(version.method))
        last_drift[version.method] = before
        last_published_drift[version.method] = to_published
        if version.is_published:
            to_published_value = 0.0
        else:
            to_published_value = to_published.relative if to_published else None
        method["ids"].append(version.pk)
        method["labels"].append(f"#{version.pk} {version.label}".strip())
        method["to_previous"].append(before.relative if before else None)
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
        last_published_drift=last_published_drift,
    )


def drift_alerts(study: Study, data: DriftSeries) -> list[str]:
    """Alerts about each method's newest version (crossings and flagged drift)."""
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
        window = ((latest.diagnostics or {}).get("drift") or {}).get("window") or {}
        others = (before_id, data.published.get(method), window.get("version"))
        for name, other in zip(("previous", "published", "window"), others, strict=True):
            alarm = drift_alarm(latest, name, other)
            if alarm and other != latest.pk:
                alerts.append(
                    f"{latest.get_method_display()} #{latest.pk}: drift from the {name} version "
                    f"#{other}: {alarm}."
                )
    watch = watch_check(study_id=study.pk)
    if watch is not None:
        flag = "" if watch.get("flagged") else " (not a flag)"
        alerts.append(
            f"The drift flag is watching: the check of #{watch['made_by']} found its answers to "
            f"control pairs {-watch['z']:.1f} standard errors short of their promise{flag}. "
            "Until the next check the sampler offers only control pairs."
        )
    return alerts
