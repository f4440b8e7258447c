"""The reasons annotators give (``PairJudgment.reasons``: the fields that decided a comparable or
incomparable answer), summed per field and per annotator for the study dashboard, and set
beside the fields the metric weighs (``learning/evaluation/fields.py``).

The counts are figures of the dashboard (computed by the worker with the others,
:mod:`learning.dashboards.figures`); the comparison with the metric is read when the page is
drawn, from the current version's cached field weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from annotation.models import Label, PairJudgment, Source, Study
from learning.evaluation.fields import VersionFields, version_fields
from learning.models import MetricVersion
from learning.versions.selectors import version_current, version_latest_ready


@dataclass
class ReasonCounts:
    """Answers by people that gave reasons, and how often each field was cited — in all, after
    an incomparable answer ("because of"), after a comparable one ("despite") and by each
    annotator (username → field → citations)."""

    answers: int = 0
    cited: dict[str, int] = field(default_factory=dict)
    because: dict[str, int] = field(default_factory=dict)
    despite: dict[str, int] = field(default_factory=dict)
    by_annotator: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def fields(self) -> list[str]:
        """The cited fields, most cited first (then by name)."""
        return sorted(self.cited, key=lambda f: (-self.cited[f], f))


def reason_counts(study: Study) -> ReasonCounts:
    """Sum the reasons of the study's answers by people (one query over those with reasons,
    one for the annotators' names)."""
    counts = ReasonCounts()
    rows = (
        PairJudgment.objects.filter(study=study, source=Source.ANNOTATED)
        .exclude(reasons=[])
        .values_list("annotator_id", "label", "reasons")
    )
    for annotator_id, label, reasons in rows.iterator(chunk_size=5000):
        if not reasons:
            continue
        counts.answers += 1
        mine = counts.by_annotator.setdefault(annotator_id, {})
        side = counts.because if label == Label.INCOMPARABLE else counts.despite
        for name in reasons:
            counts.cited[name] = counts.cited.get(name, 0) + 1
            side[name] = side.get(name, 0) + 1
            mine[name] = mine.get(name, 0) + 1
    names = dict(
        get_user_model()
        .objects.filter(pk__in=list(counts.by_annotator))
        .values_list("pk", "username")
    )
    counts.by_annotator = {names.get(k, str(k)): v for k, v in counts.by_annotator.items()}
    return counts


@dataclass
class ReasonRow:
    field: str
    cited: int
    because: int
    despite: int
    per_annotator: list[int]
    share: float | None  # the field's share of the metric (None: no metric or not a field of φ)
    ignored: bool


@dataclass
class ReasonsView:
    counts: ReasonCounts
    annotators: list[str]
    rows: list[ReasonRow]
    version: MetricVersion | None
    because_but_ignored: list[str]  # cited as making records incomparable; the metric ignores
    weighed_not_cited: list[str]  # fields the metric weighs that no annotator cites


def metric_version(study: Study) -> MetricVersion | None:
    """The version the reasons are set beside: the current one, else the newest EXPLORE."""
    return version_current(study_id=study.pk) or version_latest_ready(
        study_id=study.pk, method=MetricVersion.Method.EXPLORE
    )


def reasons_view(study: Study, counts: ReasonCounts | None) -> ReasonsView | None:
    """The dashboard's table: each field annotators cite (the metric's fields after them)
    with its citations, per annotator, and its share of the metric."""
    if counts is None or not study.space.feature_map:
        return None
    version = metric_version(study)
    found: VersionFields | None = version_fields(version) if version is not None else None
    weights = {f.field: f for f in found.fields} if found else {}
    annotators = sorted(counts.by_annotator)
    metric_order = [f.field for f in found.by_share] if found else []
    names = counts.fields + [f for f in metric_order if f not in counts.cited]
    rows = [
        ReasonRow(
            field=name,
            cited=counts.cited.get(name, 0),
            because=counts.because.get(name, 0),
            despite=counts.despite.get(name, 0),
            per_annotator=[counts.by_annotator[a].get(name, 0) for a in annotators],
            share=weights[name].share if name in weights else None,
            ignored=bool(name in weights and weights[name].ignored),
        )
        for name in names
    ]
    return ReasonsView(
        counts=counts,
        annotators=annotators,
        rows=rows,
        version=version if found else None,
        because_but_ignored=[r.field for r in rows if r.because and r.ignored],
        weighed_not_cited=[r.field for r in rows if not r.cited and r.share and not r.ignored],
    )
