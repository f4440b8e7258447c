"""Where a study's metrics stand, for the dashboard and the drift page: per method the last good
version, a failure since, what it waits for and what a young study still lacks; and the
annotators' reliability as the latest EXPLORE version estimated it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.db.models import Count

from annotation.models import Label, LabelCode, PairJudgment, Study
from learning.evaluation.informative import not_informative_line
from learning.models import MetricVersion, RefitState
from learning.refits import fitting, service
from learning.versions.selectors import version_latest_ready


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
    queued: datetime | None = None  # a refit of the study is queued for this time
    not_informative: str = ""  # why last_good is not the study's current metric


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
        MetricVersion.objects.filter(study=study, transient=False, cohort="")
        .exclude(status=MetricVersion.Status.FITTING)
        .order_by("id")
        .only(
            "id",
            "method",
            "label",
            "status",
            "error",
            "is_published",
            "created_at",
            "study",
            "informative",
        )
    ):
        good, failed = newest.get(version.method, (None, None))
        if version.status == MetricVersion.Status.READY:
            newest[version.method] = (version, None)
        else:
            newest[version.method] = (good, version)
    outcome, queued = RefitState.objects.filter(study=study).values_list(
        "last_outcome", "due_at"
    ).first() or ("", None)
    outcome = outcome or ""
    waits = {}
    if outcome.startswith("waiting: "):
        for part in outcome.removeprefix("waiting: ").split(service.WAITING_SEPARATOR):
            method, _, reason = part.partition(": ")
            waits[method] = reason
    needs = {MetricVersion.Method.EXPLORE: _explore_needs(study)}
    statuses = []
    for method, name in MetricVersion.Method.choices:
        good, failed = newest.get(method, (None, None))
        need = needs.get(method, "")
        if good is None and failed is None and method not in waits and not need:
            continue
        statuses.append(
            MethodStatus(method, name, good, failed, waits.get(method, ""), need, queued)
        )
    return [_with_informative(s) for s in statuses]


def _with_informative(status: MethodStatus) -> MethodStatus:
    """The status with the line saying why its last good version is not yet informative (one
    query, only for such a version)."""
    good = status.last_good
    if good is None or good.informative:
        return status
    stored = (
        MetricVersion.objects.filter(pk=good.pk)
        .values_list("diagnostics__informative", flat=True)
        .first()
    )
    return replace(status, not_informative=not_informative_line(stored))


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
