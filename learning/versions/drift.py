"""Drift between two metric versions, and when it is flagged: the one definition of each.

The numbers come from the numerical core (:func:`learning.core.drift.drift`); here they become a
:class:`Drift` (JSON-ready, angles in degrees), cached per pair of Sigma files (a Sigma file
never changes once its version is ready). The worker stores the drift of each new version to its
previous and to the published version in ``diagnostics["drift"]`` (:func:`drift_record`); pages
read it from there (:func:`drift_of`) and compute only pairs the worker did not store.

**The flag** (:func:`drift_check`) does not read ‖ΔΣ‖, whose scale the feature map sets: it asks
whether the answers that came after the older version follow the rule it learned. Those answers
(at most the newer version's watermark, the same annotators left out) are scored under the older
EXPLORE Σ; their gain over guessing the comparable rate of the older version's own answers,
paired answer by answer, is compared with the gain its held-out pairs promised over the same
constant (:func:`learning.core.drift.answers_fit_change`, ``z_gain``); the version is flagged
when it falls short beyond what chance explains at the study's ``drift_alarm_rate`` (one-sided:
the share of comparisons flagged when the annotators' rule did not change is at most that rate).
Versions stored before held-out gains keep the former rule (worse than the promised
log-likelihood and than guessing their own rate, both). FACE has no model of the answers:
its drift is shown, never flagged. Fewer than ``CHECK_MIN_ANSWERS`` later answers, an older
version fitted on fewer than ``CHECK_MIN_VERSION_ANSWERS`` answers or without a held-out figure
are not judged (and say so). A version weighted by reliability is scored as its fit modelled
the answers: its Σ predicts the true label, flipped at the annotators' mean estimated flip rate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import lru_cache

import numpy as np
from django.db.models import Count
from scipy.stats import norm

from annotation.models import Label, PairJudgment
from learning.core.drift import answers_fit_change
from learning.core.drift import drift as core_drift
from learning.models import MetricVersion

from .sigmas import sigma_cached, sigma_of

CHECK_MIN_ANSWERS = 10  # later answers needed before a change is judged
# A version fitted on fewer answers is not judged. Introduced when young versions' held-out
# figures flattered them (issue 25), mostly through a FACE prior that had seen the held-out
# pairs (now refitted per fold). Still needed: a held-out figure from five folds of 4 pairs
# is no promise (tests/learning/test_drift_alarms.py with the minimum at 20: the 20-answer
# version promised +0.139 over the constant, gained -0.338 on the next 20 answers, z = -3.52,
# a false alarm; the 40-answer one z = +0.36). Between 20 and 50 is not measured finely.
CHECK_MIN_VERSION_ANSWERS = 50
LABEL_Y = {Label.COMPARABLE: 1.0, Label.INCOMPARABLE: 0.0, Label.UNSURE: 0.5}
# a version's counts of its answers by label (learning/refits/pairs.py: data_counts)
LABEL_COUNTS = {"comparable": Label.COMPARABLE, "incomparable": Label.INCOMPARABLE}
LABEL_COUNTS["unsure"] = Label.UNSURE


@dataclass(frozen=True)
class Drift:
    operator_norm: float  # ‖Σ₁ - Σ₀‖₂
    relative: float  # ‖Σ₁ - Σ₀‖₂ / ‖Σ₀‖₂
    frobenius: float
    max_angle_degrees: float  # largest principal angle between the sensitive subspaces
    angles_degrees: list[float]
    sensitive_dims: tuple[int, int] = (0, 0)  # the dimension compared, before and after
    dim_rules: tuple[str, str] = ("gap", "gap")  # how each was found (learning.core.drift)


def drift(before: np.ndarray, after: np.ndarray) -> Drift | None:
    """How far ``after`` moved from ``before``; None when their dimensions differ."""
    if before.shape != after.shape:
        return None
    try:
        found = core_drift(before, after)
    except ValueError:  # a stored matrix that is not a valid Sigma: no drift figure
        return None
    # Rounded: nested subspaces give angles of 1e-13 degrees, which are 0.
    angles = np.round(np.degrees(np.asarray(found.principal_angles)), 6)
    return Drift(
        operator_norm=found.operator_norm,
        relative=found.relative_operator_norm,
        frobenius=found.frobenius_norm,
        max_angle_degrees=float(angles.max()) if angles.size else 0.0,
        angles_degrees=[float(a) for a in np.sort(angles)],
        sensitive_dims=tuple(int(k) for k in found.sensitive_dims),
        dim_rules=tuple(found.dim_rules),
    )


@lru_cache(maxsize=4096)
def _drift_cached(path_a, sha_a, path_b, sha_b) -> Drift | None:
    return drift(sigma_cached(path_a, sha_a), sigma_cached(path_b, sha_b))


def drift_between(before: MetricVersion | None, after: MetricVersion) -> Drift | None:
    """How far ``after`` moved from ``before`` (cached per pair of files); None without both."""
    if before is None or before.pk == after.pk or not before.sigma or not after.sigma:
        return None
    return _drift_cached(
        before.sigma.path, before.sigma_sha256, after.sigma.path, after.sigma_sha256
    )


@dataclass(frozen=True)
class DriftCheck:
    """The flag's test (module docstring): the later answers under the older version."""

    flagged: bool
    note: str  # what was found, in words (shown on the pages)
    answers: int = 0
    loglik: float | None = None  # mean log-likelihood of the later answers, older Sigma
    expected: float | None = None  # the older version's held-out log-likelihood
    z: float | None = None
    limit: float | None = None  # flagged when z < -limit and z_constant < -limit
    constant: float | None = None  # the later answers under their own comparable rate
    z_constant: float | None = None
    gain: float | None = None  # their gain over guessing the older version's comparable rate
    promised_gain: float | None = None  # the older version's held-out gain over that constant
    z_gain: float | None = None  # flagged when z_gain < -limit (older records: z and z_constant)


def drift_limit(alarm_rate: float) -> float:
    """The one-sided normal quantile for the study's alarm rate."""
    return float(norm.isf(min(max(alarm_rate, 1e-12), 0.5)))


def _later_answers(before: MetricVersion, after: MetricVersion) -> tuple[np.ndarray, np.ndarray]:
    """The answers after ``before``'s watermark up to ``after``'s, as the fit saw them: row
    differences and labels in [0, 1] (one query and one read of the vectors)."""
    rows = list(
        PairJudgment.objects.filter(
            study_id=after.study_id,
            id__gt=before.judgment_watermark,
            id__lte=after.judgment_watermark,
        )
        .exclude(annotator_id__in=(after.parameters or {}).get("excluded_annotators") or [])
        .values_list("item_a__row", "item_b__row", "label")
    )
    if not rows:
        return np.empty((0, 0)), np.empty(0)
    row_a, row_b, labels = zip(*rows, strict=True)
    space = after.study.space
    return space.vectors(row_a) - space.vectors(row_b), np.array([LABEL_Y[v] for v in labels])


def _promise(before: MetricVersion) -> tuple[float, tuple[float, float], float] | None:
    """The older version's held-out gain over the constant, its interval, and the comparable
    rate of the answers it was fitted on (what that constant predicts); None without them."""
    const = ((before.diagnostics or {}).get("heldout_baselines") or {}).get("constant") or {}
    low, high = const.get("gain_ci") or (None, None)
    if const.get("gain") is None or low is None or high is None:
        return None
    stored = before.counts or {}
    if "adjudications" not in (before.parameters or {}) and stored.keys() >= set(LABEL_COUNTS):
        # the labels of the answers it read, counted by its refit (no adjudicated label among
        # them): the same as the query below without a pass over every answer
        counts = {label: int(stored[key]) for key, label in LABEL_COUNTS.items()}
    else:
        counts = dict(
            PairJudgment.objects.filter(study_id=before.study_id, id__lte=before.judgment_watermark)
            .exclude(annotator_id__in=(before.parameters or {}).get("excluded_annotators") or [])
            .order_by()
            .values_list("label")
            .annotate(n=Count("id"))
        )
    total = sum(counts.values())
    if not total:
        return None
    rate = sum(LABEL_Y[label] * n for label, n in counts.items()) / total
    return float(const["gain"]), (float(low), float(high)), rate


def _flip_rate(version: MetricVersion) -> float:
    """The answers' mean flip rate a reliability-weighted fit estimated (0 when not weighted)."""
    rows = [
        row
        for row in (version.diagnostics or {}).get("reliability") or []
        if row.get("flip_rate") is not None
    ]
    answers = sum(int(row["answers"]) for row in rows)
    if not answers:
        return 0.0
    return min(0.49, sum(int(row["answers"]) * float(row["flip_rate"]) for row in rows) / answers)


def drift_check(before: MetricVersion, after: MetricVersion, alarm_rate: float) -> DriftCheck:
    """Whether ``after``'s data says the annotators' rule changed since ``before``."""
    if before.method != MetricVersion.Method.EXPLORE:
        return DriftCheck(False, "FACE has no model of the answers: its drift is not judged")
    expected = (before.diagnostics or {}).get("heldout_loglik")
    interval = (before.diagnostics or {}).get("heldout_loglik_ci") or [None, None]
    if expected is None or None in interval:
        return DriftCheck(False, f"#{before.pk} has no held-out figure to judge against")
    answered = int((before.counts or {}).get("judgments_total") or 0)
    if answered < CHECK_MIN_VERSION_ANSWERS:
        return DriftCheck(
            False,
            f"#{before.pk} rests on {answered} answers; its held-out figure is judged from "
            f"{CHECK_MIN_VERSION_ANSWERS}",
        )
    differences, y = _later_answers(before, after)
    if y.size < CHECK_MIN_ANSWERS:
        return DriftCheck(
            False, f"{y.size} answers since #{before.pk}; {CHECK_MIN_ANSWERS} are needed to judge"
        )
    found = answers_fit_change(
        sigma_of(before),
        differences,
        y,
        expected,
        tuple(interval),
        _flip_rate(before),
        promised=_promise(before),
    )
    limit = drift_limit(alarm_rate)
    note = (
        f"the {found.answers} answers since #{before.pk} score {found.loglik:.3f} under it, "
        f"where its held-out pairs promised {found.expected:.3f} (z = {found.z:.2f}); "
        f"guessing their comparable rate scores {found.constant:.3f} (z = "
        f"{found.z_constant:.2f})"
    )
    if found.z_gain is None:  # a version stored before its held-out gains: both must fall
        flagged = bool(found.z < -limit and found.z_constant < -limit)
        note += f"; flagged when both fall below {-limit:.2f}"
    else:
        flagged = bool(found.z_gain < -limit)
        note += (
            f"; they gain {found.gain:+.3f} per answer over its constant prediction, where it "
            f"promised {found.promised_gain:+.3f} (z = {found.z_gain:.2f}); flagged below "
            f"{-limit:.2f}"
        )
    gains = (found.gain, found.promised_gain, found.z_gain)
    return DriftCheck(
        flagged,
        note,
        int(found.answers),
        *(float(v) for v in (found.loglik, found.expected, found.z, limit)),
        *(float(v) for v in (found.constant, found.z_constant)),
        *(None if v is None else float(v) for v in gains),
    )


def drift_record(
    before: MetricVersion | None, after: MetricVersion, alarm_rate: float
) -> dict | None:
    """What the worker stores in ``diagnostics["drift"]``: the drift, the other version, the
    flag's test (``check``) and the flag."""
    moved = drift_between(before, after)
    if moved is None:
        return None
    check = drift_check(before, after, alarm_rate)
    return asdict(moved) | {"version": before.pk, "check": asdict(check), "flagged": check.flagged}


def drift_alarm(version: MetricVersion, which: str, other_id: int | None) -> str:
    """The drift flag the worker stored for ``version`` against its ``which`` ("previous",
    "published") version ``other_id``, in words; "" when not flagged or not compared."""
    stored = ((version.diagnostics or {}).get("drift") or {}).get(which)
    if not isinstance(stored, dict) or not other_id or stored.get("version") != other_id:
        return ""
    if stored.get("flagged") and "check" in stored:  # (older records: an old rule)
        return (stored.get("check") or {}).get("note") or "flagged"
    return ""


_FIELDS = {f.name for f in fields(Drift)}


def drift_of(version: MetricVersion, other: MetricVersion | None) -> Drift | None:
    """How far ``version`` moved from ``other``: as the worker stored it when it compared these
    two, else computed (and cached)."""
    if other is None:
        return None
    for stored in ((version.diagnostics or {}).get("drift") or {}).values():
        if not isinstance(stored, dict) or stored.get("version") != other.pk:
            continue
        if stored.keys() >= _FIELDS:  # (versions evaluated before this format: computed)
            found = {name: stored[name] for name in _FIELDS}
            found["sensitive_dims"] = tuple(found["sensitive_dims"])
            found["dim_rules"] = tuple(found["dim_rules"])
            return Drift(**found)
    return drift_between(other, version)
