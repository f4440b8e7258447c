"""One metric version's page: its spectrum and sensitive directions (with the items most aligned
with each), drift to the previous and the published version, its WEAT results and alerts.

Sigmas are read through :mod:`learning.versions.sigmas` (cached by sha256) and drift through
:mod:`learning.versions.drift` (stored by the worker, else cached per pair of files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from learning.evaluation import spectra
from learning.evaluation.fields import FieldChange, VersionFields, fields_differ, version_fields
from learning.evaluation.informative import not_informative_line
from learning.models import MetricVersion, WeatResult, WeatTest
from learning.versions.drift import Drift, drift_alarm, drift_of
from learning.versions.selectors import version_published
from learning.versions.sigmas import sigma_of

from .weat_table import crossings


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


def version_alerts(version, previous, published, weat) -> list[str]:
    """Alerts for a version: WEAT tests crossing 0.05 vs the previous version, flagged drift
    from the previous and from the published version (as the worker judged it)."""
    alerts = [f"Safeguard: {warning}" for warning in version.diagnostics.get("warnings", [])]
    if line := not_informative_line(version.diagnostics.get("informative")):
        alerts.insert(0, line)
    if version.diagnostics.get("evaluation_error"):
        alerts.append(
            f"The evaluation of this version failed: {version.diagnostics['evaluation_error']}"
        )
    if previous is not None:
        alerts += crossings(weat.get(previous.pk, {}), weat.get(version.pk, {}))
    for name, other in zip(("previous", "published"), (previous, published), strict=True):
        alarm = drift_alarm(version, name, other.pk if other is not None else None)
        if alarm and other.pk != version.pk:
            alerts.append(f"Drift from the {name} version #{other.pk}: {alarm}.")
    return alerts


@dataclass
class VersionReport:
    version: MetricVersion
    spectrum: list[float]
    directions: list[spectra.Direction]
    sensitive_dimension: int
    previous: MetricVersion | None
    published: MetricVersion | None
    drift_previous: Drift | None
    drift_published: Drift | None
    weat: list[tuple[WeatTest, WeatResult | None, WeatResult | None]]  # test, euclid, this
    alerts: list[str] = field(default_factory=list)
    fields: VersionFields | None = None  # record studies: the metric field by field


def version_report(version: MetricVersion) -> VersionReport:
    ready = version.status == MetricVersion.Status.READY and bool(version.sigma)
    previous = previous_version(version)
    published = version_published(study_id=version.study_id, method=version.method)
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
    moved = (drift_of(version, previous), drift_of(version, published)) if ready else (None, None)
    fields = version_fields(version)
    return VersionReport(
        version=version,
        spectrum=[float(v) for v in spectra.spectrum(sigma_of(version)).values] if ready else [],
        # Records are explained by their fields (item ids say nothing): no aligned items.
        directions=spectra.sensitive_directions(version) if ready and fields is None else [],
        sensitive_dimension=spectra.sensitive_dimension(version) if ready else 0,
        previous=previous,
        published=published,
        drift_previous=moved[0],
        drift_published=moved[1],
        weat=[(t, euclid.get(t.pk), weat[version.pk].get(t.pk)) for t in tests],
        alerts=(version_alerts(version, previous, published, weat) if ready else []),
        fields=fields,
    )


# The words a reader sees for the stored keys (others: the key with spaces for underscores).
PLAIN_NAMES = {
    "pairs_distinct": "distinct pairs",
    "heldout_folds": "held-out folds",
    "heldout_loglik": "held-out log-likelihood",
    "heldout_loglik_ci": "held-out log-likelihood, 95 % interval",
    "heldout_auc": "held-out AUC",
    "heldout_pairs": "held-out pairs",
    "heldout_fit": "held-out fit",
    "held_out": "held out",
    "judgments_total": "answers in the study",
    "group_creators": "people who made groups",
    "groups_used": "groups used",
    "n_components": "sensitive factors k",
    "n_components_fitted": "sensitive factors fitted",
    "n_constrained": "constrained directions",
    "max_eigenvalue": "largest eigenvalue",
    "max_eigenvalue_bound": "eigenvalue bound",
    "bound_active": "bound active",
    "projected_gradient_norm": "projected gradient norm",
    "explained_variance_ratio": "explained variance ratio",
    "singular_values": "singular values",
    "snapshot_seconds": "snapshot, seconds",
    "fit_seconds": "fit, seconds",
    "evaluation_seconds": "evaluation, seconds",
    "repeat_policy": "repeated answers",
    "validation_share": "validation share",
    "excluded_annotators": "excluded annotators",
    "pairs_as_groups": "pairs as groups",
    "prior_scale": "prior scale",
    "penalty_path": "penalty path",
    "flip_rate": "flip rate",
    "random_state": "random seed",
    "operator_norm": "‖ΔΣ‖ (operator norm)",
    "max_angle_degrees": "largest principal angle, degrees",
    "angles_degrees": "principal angles, degrees",
    "sensitive_dims": "sensitive dimensions",
    "dim_rules": "dimension rules",
}


def scalar_rows(values: dict, prefix: str = "") -> list[tuple[str, str]]:
    """Diagnostics as table rows in plain words (``PLAIN_NAMES``): nested dicts flattened
    (``drift · previous · …``), long lists summarised (the spectrum is charted)."""
    rows = []
    for key, value in sorted(values.items()):
        name = prefix + PLAIN_NAMES.get(key, str(key).replace("_", " "))
        if isinstance(value, dict):
            rows += scalar_rows(value, prefix=f"{name} · ")
            continue
        if isinstance(value, list):
            value = (
                f"{len(value)} values"
                if len(value) > 8
                else ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in value)
            )
        elif isinstance(value, float):
            value = f"{value:.6g}"
        elif value is None:
            value = "—"
        rows.append((name, str(value)))
    return rows


@dataclass
class Comparison:
    """Two versions side by side: drift from a to b, each one's spectrum and sensitive
    directions (ready versions only), WEAT results, diagnostics and counts as rows."""

    drift: Drift | None
    spectra: tuple[list[float], list[float]]
    directions: list[list[spectra.Direction]]
    weat: list[tuple[WeatTest, WeatResult | None, WeatResult | None]]
    diagnostics: list[tuple[str, str, str]]
    counts: list[tuple[str, object, object]]
    fields: tuple[VersionFields | None, VersionFields | None] = (None, None)
    fields_moved: list[FieldChange] = field(default_factory=list)  # the fields they differ on

    @property
    def field_rows(self) -> list[tuple[str, object, object]]:
        """(field, a's weight, b's weight) for every field of either, in φ's order."""
        a, b = ({f.field: f for f in v.fields} if v else {} for v in self.fields)
        return [(name, a.get(name), b.get(name)) for name in dict.fromkeys([*a, *b])]


def version_comparison(a: MetricVersion, b: MetricVersion) -> Comparison:
    ready = [v for v in (a, b) if v.status == MetricVersion.Status.READY and v.sigma]
    values = {v.pk: [float(x) for x in spectra.spectrum(sigma_of(v)).values] for v in ready}
    weat = weat_rows_for([a, b])
    tests = sorted(
        {r.test for rows in weat.values() for r in rows.values()},
        key=lambda t: (t.kind, t.position, t.pk),
    )
    diag_a, diag_b = dict(scalar_rows(a.diagnostics)), dict(scalar_rows(b.diagnostics))
    fields = (version_fields(a), version_fields(b))
    records = fields[0] is not None or fields[1] is not None
    return Comparison(
        drift=drift_of(b, a) if len(ready) == 2 else None,
        spectra=(values.get(a.pk, []), values.get(b.pk, [])),
        directions=[
            spectra.sensitive_directions(v) if v in ready and not records else [] for v in (a, b)
        ],
        weat=[(t, weat[a.pk].get(t.pk), weat[b.pk].get(t.pk)) for t in tests],
        diagnostics=[
            (k, diag_a.get(k, "—"), diag_b.get(k, "—")) for k in sorted(set(diag_a) | set(diag_b))
        ],
        counts=[
            (k, a.counts.get(k, "—"), b.counts.get(k, "—"))
            for k in sorted(set(a.counts) | set(b.counts))
        ],
        fields=fields,
        fields_moved=fields_differ(*fields) if fields[0] and fields[1] else [],
    )
