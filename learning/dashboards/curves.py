"""Learning curves for the study dashboard (issue 19).

* :func:`study_curve` — this study's own curve: the held-out log-likelihood of each ready
  EXPLORE version (``diagnostics["heldout_loglik"]`` and its 95 % interval, written by
  :func:`learning.refits.fitting.fit_explore`) against the answers the version was fitted on
  (``counts["judgments"]``, the size of its data snapshot). One query for all versions.
* :func:`strategy_efficiency` — the measured figures of ``benchmarks/label_efficiency.py``
  (its ``--json`` output, shipped as ``learning/dashboards/data/label_efficiency.json``): per sampler
  strategy, the mean held-out log-likelihood over the seeds that reached each checkpoint, with a
  95 % t-interval when at least two did, and the benchmark's yardstick (start, full data,
  target). Read once per process and file version; a missing or malformed file gives ``None``
  (the page says no measurement is shipped).
"""

from __future__ import annotations

import functools
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db.models.fields.json import KT
from scipy import stats

from annotation.models import Study
from learning.models import MetricVersion

logger = logging.getLogger(__name__)

MEASUREMENT_PATH = Path(__file__).resolve().parent / "data" / "label_efficiency.json"
MEASUREMENT_COMMAND = (
    "python benchmarks/label_efficiency.py --json learning/dashboards/data/label_efficiency.json"
)
METHOD_NOTE = "docs/active_learning.md"
YARDSTICK_LINES = ("start", "full", "target")


# --- this study's curve ------------------------------------------------------------------------


@dataclass(frozen=True)
class CurvePoint:
    version_id: int
    label: str
    answers: int
    loglik: float
    low: float | None
    high: float | None
    published: bool
    annotators: int | None = None  # the people whose answers the version was fitted on


@dataclass(frozen=True)
class StudyCurve:
    points: list[CurvePoint]  # by answers, then version
    without_figure: int  # ready EXPLORE versions with no held-out figure (e.g. no validation)

    @property
    def annotator_changes(self) -> list[tuple[CurvePoint, int]]:
        """The points where more annotators' answers came in than at the point before, with the
        count before: the held-out pairs then hold a new person's answers, and a fall of the
        curve there (−0.03 to −0.65 when a second annotator arrived) says how differently they
        answer, not that the metric got worse."""
        changes = []
        for before, point in zip(self.points, self.points[1:], strict=False):
            if (before.annotators or 0) and (point.annotators or 0) > before.annotators:
                changes.append((point, before.annotators))
        return changes


def study_curve(study: Study) -> StudyCurve:
    """The held-out log-likelihood of each ready EXPLORE version against its answers."""
    rows = (
        MetricVersion.objects.ready()
        .filter(study=study, method=MetricVersion.Method.EXPLORE, cohort="")
        .order_by("pk")
        .values_list(
            "pk",
            "label",
            "is_published",
            "counts",
            KT("diagnostics__heldout_loglik"),
            KT("diagnostics__heldout_loglik_ci__0"),
            KT("diagnostics__heldout_loglik_ci__1"),
        )
    )
    points, missing = [], 0
    for pk, label, published, counts, loglik, low, high in rows:
        answers, loglik = _answers(counts), _number(loglik)
        if answers is None or loglik is None:
            missing += 1
            continue
        people = counts.get("annotators") if isinstance(counts, dict) else None
        points.append(
            CurvePoint(
                pk,
                label,
                answers,
                loglik,
                _number(low),
                _number(high),
                published,
                people if isinstance(people, int) else None,
            )
        )
    points.sort(key=lambda p: (p.answers, p.version_id))
    return StudyCurve(points=points, without_figure=missing)


def _answers(counts) -> int | None:
    """The answers a version was fitted on: its snapshot's size (older rows: the label sum)."""
    if not isinstance(counts, dict):
        return None
    value = counts.get("judgments")
    if value is None:
        labels = [counts.get(k) for k in ("comparable", "incomparable", "unsure")]
        if all(v is None for v in labels):
            return None
        value = sum(v or 0 for v in labels)
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _number(value) -> float | None:
    """A finite float from a JSON key read as text (None, "null" or junk: None)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


# --- the benchmark's measured strategy efficiency ------------------------------------------------


@dataclass(frozen=True)
class StrategyCurve:
    strategy: str
    labels: list[int]  # checkpoints reached by at least one seed
    mean: list[float]
    low: list[float | None]  # 95 % t-interval; None where fewer than 2 seeds
    high: list[float | None]
    seeds: list[int]  # seeds that ran each checkpoint


@dataclass(frozen=True)
class Measurement:
    curves: list[StrategyCurve]  # in the file's order of first appearance
    yardstick: dict[str, float]  # start, full, target (and sigma0 when given)
    seeds: int  # distinct seeds in the file
    command: str

    @property
    def target_share(self) -> float:
        """The share of the full-data gain the target asks for (the benchmark's --target-share)."""
        start, full = self.yardstick["start"], self.yardstick["full"]
        return (self.yardstick["target"] - start) / (full - start) if full != start else 1.0

    def measures(self, strategy: str) -> bool:
        return any(c.strategy == strategy for c in self.curves)


class MalformedMeasurement(ValueError):
    pass


def strategy_efficiency(path: Path | str | None = None) -> Measurement | None:
    """The shipped measurement, or None when the file is missing or malformed (logged).

    Cached in-process per (path, modification time, size): a new file is read again.
    """
    path = Path(path) if path is not None else MEASUREMENT_PATH
    try:
        stat = path.stat()
    except OSError:
        return None
    return _measurement(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _measurement(path: str, mtime_ns: int, size: int) -> Measurement | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return measurement_from(data)
    except (OSError, UnicodeDecodeError, ValueError) as error:  # MalformedMeasurement included
        logger.warning("label-efficiency measurement %s not shown: %s", path, error)
        return None


def measurement_from(data) -> Measurement:
    """Means and intervals per strategy from the benchmark's ``--json`` document."""
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list) or not data["runs"]:
        raise MalformedMeasurement("no list of runs")
    stick = data.get("yardstick")
    if not isinstance(stick, dict):
        raise MalformedMeasurement("no yardstick")
    yardstick = {}
    for key in (*YARDSTICK_LINES, "sigma0"):
        value = _number(stick.get(key)) if not isinstance(stick.get(key), bool) else None
        if value is None and key != "sigma0":
            raise MalformedMeasurement(f"yardstick {key!r} is not a number")
        if value is not None:
            yardstick[key] = value
    by_strategy: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    seeds = set()
    for run in data["runs"]:
        strategy, labels, loglik = _run(run)
        by_strategy.setdefault(strategy, []).append((labels, loglik))
        seeds.add(run.get("seed"))
    command = data.get("command")
    return Measurement(
        curves=[_strategy_curve(name, runs) for name, runs in by_strategy.items()],
        yardstick=yardstick,
        seeds=len(seeds),
        command=command if isinstance(command, str) and command else MEASUREMENT_COMMAND,
    )


def _run(run) -> tuple[str, np.ndarray, np.ndarray]:
    if not isinstance(run, dict) or not isinstance(run.get("strategy"), str):
        raise MalformedMeasurement("a run without a strategy")
    labels, loglik = run.get("labels"), run.get("loglik")
    if not isinstance(labels, list) or not isinstance(loglik, list) or not labels:
        raise MalformedMeasurement(f"{run['strategy']}: labels and loglik must be lists")
    if len(labels) != len(loglik):
        raise MalformedMeasurement(f"{run['strategy']}: labels and loglik differ in length")
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in labels):
        raise MalformedMeasurement(f"{run['strategy']}: labels must be positive integers")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in loglik):
        raise MalformedMeasurement(f"{run['strategy']}: loglik must be numbers")
    labels_array = np.asarray(labels, dtype=np.int64)
    if np.any(np.diff(labels_array) <= 0):
        raise MalformedMeasurement(f"{run['strategy']}: labels must increase")
    return run["strategy"], labels_array, np.asarray(loglik, dtype=np.float64)


def _strategy_curve(strategy: str, runs: list[tuple[np.ndarray, np.ndarray]]) -> StrategyCurve:
    """Seeds × checkpoints (NaN where a run stopped earlier or has no figure), then per column:
    mean, and mean ± t(0.975, n − 1)·s/√n over its n ≥ 2 seeds."""
    labels = np.unique(np.concatenate([r[0] for r in runs]))
    table = np.full((len(runs), labels.size), np.nan)
    for row, (run_labels, loglik) in enumerate(runs):
        table[row, np.searchsorted(labels, run_labels)] = loglik
    present = np.isfinite(table)
    n = present.sum(axis=0)
    keep = n > 0
    labels, table, present, n = labels[keep], table[:, keep], present[:, keep], n[keep]
    values = np.where(present, table, 0.0)
    mean = values.sum(axis=0) / n
    spread = np.where(present, table - mean, 0.0)
    several = n >= 2
    sd = np.sqrt((spread**2).sum(axis=0) / np.maximum(n - 1, 1))
    half = np.where(several, stats.t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(n), np.nan)
    return StrategyCurve(
        strategy=strategy,
        labels=[int(v) for v in labels],
        mean=[float(v) for v in mean],
        low=[float(m - h) if ok else None for m, h, ok in zip(mean, half, several, strict=True)],
        high=[float(m + h) if ok else None for m, h, ok in zip(mean, half, several, strict=True)],
        seeds=[int(v) for v in n],
    )


def measurement_table(measurement: Measurement | None) -> list[tuple[int, list]]:
    """The measured curves as table rows: (labels, per strategy (mean, low, high, seeds) or
    None where no seed ran that checkpoint)."""
    if measurement is None:
        return []
    labels = sorted({n for c in measurement.curves for n in c.labels})
    cells = [
        dict(zip(c.labels, zip(c.mean, c.low, c.high, c.seeds, strict=True), strict=True))
        for c in measurement.curves
    ]
    return [(n, [found.get(n) for found in cells]) for n in labels]


# --- chart data ------------------------------------------------------------------------------------


def chart_data(curve: StudyCurve, measurement: Measurement | None, strategy: str) -> dict:
    """What the dashboard's script draws (through json_script)."""
    data: dict = {
        "curve": {
            "answers": [p.answers for p in curve.points],
            "loglik": [p.loglik for p in curve.points],
            "low": [p.low for p in curve.points],
            "high": [p.high for p in curve.points],
            "names": [f"#{p.version_id} {p.label}".strip() for p in curve.points],
            "annotator_changes": [
                {"answers": p.answers, "before": n, "after": p.annotators}
                for p, n in curve.annotator_changes
            ],
        },
        "efficiency": None,
    }
    if measurement is not None:
        data["efficiency"] = {
            "strategy": strategy,
            "curves": [
                {
                    "strategy": c.strategy,
                    "labels": c.labels,
                    "mean": c.mean,
                    "low": c.low,
                    "high": c.high,
                    "seeds": c.seeds,
                }
                for c in measurement.curves
            ],
            "yardstick": {k: measurement.yardstick[k] for k in YARDSTICK_LINES},
        }
    return data
