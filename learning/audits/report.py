"""What the audit pages show: the summary as rows (Σ beside Euclidean, with intervals), each
violation as the labelling page shows a pair (records field by field, each differing field
marked with its share of d_Σ²), and two audits side by side."""

from __future__ import annotations

from dataclasses import dataclass

from learning.audits.selectors import Answers
from learning.models import AuditViolation, ModelAudit

FIGURE_ROWS = [
    (
        "violation_rate",
        "Violation rate",
        "share of (item, neighbour) pairs within ε that fail",
        True,
    ),
    ("mean_gap", "Mean gap", "mean of |Δscore| − L·d over the violations", False),
    ("worst_gap", "Worst gap", "the largest; its interval: the resampled maximum", False),
    ("consistency", "Consistency", "AIF360's, with the metric's k neighbours", False),
    (
        "decision_flip",
        "Decision flips",
        "items whose nearest neighbour gets the other decision",
        True,
    ),
]


@dataclass(frozen=True)
class FigureRow:
    key: str
    label: str
    note: str
    percent: bool
    sigma: dict | None
    euclidean: dict | None


def summary_rows(audit: ModelAudit) -> list[FigureRow]:
    summary = audit.summary or {}
    rows = []
    for key, label, note, percent in FIGURE_ROWS:
        sigma = (summary.get("sigma") or {}).get(key)
        euclid = (summary.get("euclidean") or {}).get(key)
        if sigma is None and euclid is None:
            continue
        rows.append(FigureRow(key, label, note, percent, sigma, euclid))
    return rows


UNCERTAINTY_ROWS = [
    *((key, label, percent) for key, label, _, percent in FIGURE_ROWS),
    ("all_pairs_rate", "Violation rate among all pairs within ε", True),
    ("within_share", "Share of all pairs within ε", True),
]


def uncertainty_rows(audit: ModelAudit) -> list[tuple]:
    """(key, label, percent, across items, across plausible metrics, metric wider) per figure
    of the audit's run under bootstrap refits of Σ, each range as the ``figure`` filter reads."""
    figures = (audit.uncertainty or {}).get("figures") or {}
    rows = []
    for key, label, percent in UNCERTAINTY_ROWS:
        f = figures.get(key)
        if f:
            items = {"estimate": f["audit"], "low": f["interval"][0], "high": f["interval"][1]}
            metrics = {"estimate": f["audit"], "low": f["low"], "high": f["high"]}
            rows.append((key, label, percent, items, metrics, f.get("metric_wider")))
    return rows


@dataclass(frozen=True)
class FieldRow:
    field: str
    a: str
    b: str
    differs: bool
    share: float | None


@dataclass(frozen=True)
class PairView:
    violation: AuditViolation
    fields: list[FieldRow]
    answers: Answers | None
    askable: bool


def _text(value) -> str:
    return "" if value is None else str(value)


def _record(item, record) -> dict | None:
    if record is not None:
        return record
    if item is None or item.payload is None:
        return None
    return item.shown_payload


def pair_view(violation: AuditViolation, answers: Answers | None) -> PairView:
    left = _record(violation.item_a, violation.record_a)
    right = _record(violation.item_b, violation.record_b)
    rows: list[FieldRow] = []
    if isinstance(left, dict) and isinstance(right, dict):
        differing = set(violation.differing_fields)
        for name in dict.fromkeys([*left, *right]):
            a, b = _text(left.get(name)), _text(right.get(name))
            rows.append(
                FieldRow(name, a, b, a != b or name in differing, violation.shares.get(name))
            )
    askable = violation.item_a_id is not None and violation.item_b_id is not None
    return PairView(violation, rows, answers, askable)


def compare_rows(first: ModelAudit, second: ModelAudit) -> list[tuple]:
    """(label, percent, first Σ, second Σ, first Euclidean, second Euclidean) per figure."""
    a, b = summary_rows(first), summary_rows(second)
    by_key = {row.key: row for row in b}
    out = []
    for row in a:
        other = by_key.get(row.key)
        out.append(
            (
                row.label,
                row.percent,
                row.sigma,
                other.sigma if other else None,
                row.euclidean,
                other.euclidean if other else None,
            )
        )
    return out


@dataclass(frozen=True)
class TwinRow:
    """One sensitive column's twin figures, each as ``{"estimate", "low", "high"}``."""

    column: str
    pairs: int
    delta: float
    moved_share: dict
    mean_abs_change: dict
    max_abs_change: dict
    decision_flips: dict | None
    worst: list


def twin_rows(audit: ModelAudit) -> list[TwinRow]:
    """The audit's counterfactual twins, column by column (empty without twins)."""
    rows = []
    for column, found in ((audit.summary or {}).get("counterfactual") or {}).items():
        intervals = found.get("intervals") or {}

        def fig(name: str, found=found, intervals=intervals) -> dict | None:
            if found.get(name) is None:
                return None
            low, high = intervals.get(name) or (None, None)
            return {"estimate": found[name], "low": low, "high": high}

        rows.append(
            TwinRow(
                column=column,
                pairs=found["pairs"],
                delta=found["delta"],
                moved_share=fig("moved_share"),
                mean_abs_change=fig("mean_abs_change"),
                max_abs_change=fig("max_abs_change"),
                decision_flips=fig("decision_flips"),
                worst=found.get("worst") or [],
            )
        )
    return rows


def curve_chart(audits: list[ModelAudit]) -> dict | None:
    """The curves of ``audits`` for ``static/js/audit-curves.js`` (None when none has them):
    the grid of L and per audit its rates under Σ (k neighbours, all pairs sampled) and
    Euclidean (k neighbours), and its own L."""
    series, grid = [], None
    for audit in audits:
        curves = (audit.summary or {}).get("curves")
        if not curves:
            continue
        grid = curves["L"]
        series.append(
            {
                "name": f"#{audit.pk} {audit.name}",
                "lipschitz": audit.summary.get("lipschitz", 1.0),
                "sigma": curves["sigma"]["neighbours"]["rates"],
                "all_pairs": curves["sigma"]["all_pairs"]["curve"],
                "euclidean": curves["euclidean"]["neighbours"]["rates"],
            }
        )
    return {"L": grid, "series": series} if series else None


def all_pairs_rows(audit: ModelAudit) -> dict | None:
    """The sampled all-pairs figures under Σ and Euclidean, as ``figure`` filters read them."""
    curves = (audit.summary or {}).get("curves")
    if not curves:
        return None
    return {
        "pairs": curves["sampled_pairs"],
        "sigma": curves["sigma"]["all_pairs"],
        "euclidean": curves["euclidean"]["all_pairs"],
    }


def compare_twins(first: ModelAudit, second: ModelAudit) -> list[tuple]:
    """(column, first's TwinRow or None, second's) for every column either audit has twins of."""
    a = {row.column: row for row in twin_rows(first)}
    b = {row.column: row for row in twin_rows(second)}
    return [(column, a.get(column), b.get(column)) for column in sorted(a.keys() | b.keys())]
