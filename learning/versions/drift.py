"""Drift between two metric versions, and when it is flagged: the one definition of each.

The numbers come from the numerical core (:func:`learning.core.drift.drift`); here they become a
:class:`Drift` (JSON-ready, angles in degrees), cached per pair of Sigma files (a Sigma file
never changes once its version is ready). The worker stores the drift of each new version to its
previous and to the published version in ``diagnostics["drift"]`` (:func:`drift_record`); pages
read it from there (:func:`drift_of`) and compute only pairs the worker did not store.

**The flag** (:func:`drift_check`) does not read ‖ΔΣ‖, whose scale the feature map sets: it asks
whether the answers that came after the older version follow the rule it learned. Those answers
(at most the newer version's watermark, the same annotators left out, no gold, to pairs the
older version never saw) are scored under the Σ the older version stores, as its fit modelled
them; their gain over guessing the comparable rate of its own answers is compared with the gain
its held-out answers promised (``diagnostics["drift_promise"]``,
``learning/refits/drift_promise.py``), both with standard errors that treat a pair's answers as
one cluster (``learning.core.drift.gain_shortfall``). **Like with like**: under the ``random``
strategy every answer is a uniform draw of a pair and all are compared; under any other strategy
only the answers to control pairs, which it offers only as uniform draws
(``annotation/labelling/strategies.py``): a sampler that moves to uncertain pairs changes which
pairs are asked, and answers to those would fall short of a promise made on other pairs.
(A study whose strategy changed between two versions is judged by its strategy now.)

**The rate.** ``drift_alarm_rate`` is a study's false-alarm budget over its whole life. Each
time the study's answers pass a multiple of ``WINDOW_EVERY``, two comparisons may flag the new
version: with the published version, and with the newest version at least ``WINDOW`` answers
older (:func:`window_reference`), the one with later answers enough to show a change within
``WINDOW`` answers of it. Between those, the comparison with the published version is shown,
never flagged, as is the one with the previous version (20-odd later answers) always: a
published check at every version would spend the budget in slivers of 20 answers and leave the
window check a tenth of the level it needs. The checks a version makes share
``spent_alpha(n) − spent_alpha(n₀)`` (:func:`drift_records`; n: its answers, n₀: the answers
when the study last spent any, stored as ``spent_at``), so the levels of all checks sum to less
than the rate: a study whose annotators never change their rule is flagged at all with
probability at most the rate (the union bound; whether a check is made depends on counts,
never on the answers' labels).

**The watch.** A flagging check on control pairs more than ``WATCH_Z`` standard errors short of
its promise makes the sampler offer only control pairs until the next checks
(:func:`watching`, through ``annotation.hooks.drift_watch``): a change of rule shows first as
such a shortfall, and the next check then compares up to twice as many answers. It changes how
many control answers a check compares, never its level, and control answers are uniform draws
whatever their number.

FACE has no model of the answers: its drift is shown, never flagged. Fewer than
``CHECK_MIN_ANSWERS`` later answers, an older version fitted on fewer than
``CHECK_MIN_VERSION_ANSWERS`` answers or without a promise are not judged (and say so).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache

import numpy as np
from scipy.stats import norm

from annotation.labelling.strategies import control_only, pair_control
from annotation.models import Label, PairJudgment
from learning.core.drift import answer_gains, answer_surprises, gain_shortfall, spent_alpha
from learning.core.drift import drift as core_drift
from learning.models import MetricVersion

from .sigmas import sigma_cached, sigma_of

CHECK_MIN_ANSWERS = 10  # later answers needed before a change is judged
# A version fitted on fewer answers is not judged. Introduced when young versions' held-out
# figures flattered them (issue 25), mostly through a FACE prior that had seen the held-out
# pairs (now refitted per fold); 50 then. Raised to 200 (issue 35): in 336 stationary studies
# of benchmarks/drift.py every false flag (9) came from the first window check, whose older
# version rested on 100 answers: its promise, from five folds of some 16 control answers, is
# too sure of itself (2.1 % and 4.2 % of those checks' z below the normal 1 % point, where
# checks against versions on 200 answers or more put 0-1 % there).
CHECK_MIN_VERSION_ANSWERS = 200
LABEL_Y = {Label.COMPARABLE: 1.0, Label.INCOMPARABLE: 0.0, Label.UNSURE: 0.5}
WINDOW = 300  # answers between the two ends of the window check
WINDOW_EVERY = 100  # a window check each time a study's answers pass a multiple of this
WATCH_Z = 1.0  # a flagging check this far short of its promise sets the watch (sets_watch)


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
def _drift_cached(name_a, sha_a, name_b, sha_b) -> Drift | None:
    return drift(sigma_cached(name_a, sha_a), sigma_cached(name_b, sha_b))


def drift_between(before: MetricVersion | None, after: MetricVersion) -> Drift | None:
    """How far ``after`` moved from ``before`` (cached per pair of files); None without both."""
    if before is None or before.pk == after.pk or not before.sigma or not after.sigma:
        return None
    return _drift_cached(
        before.sigma.name, before.sigma_sha256, after.sigma.name, after.sigma_sha256
    )


@dataclass(frozen=True)
class DriftCheck:
    """The flag's test (module docstring): the later answers under the older version."""

    flagged: bool
    note: str  # what was found, in words (shown on the pages)
    answers: int = 0  # the later answers compared (to pairs the older version never saw)
    pairs: int = 0  # ... and their distinct pairs (the clusters of the standard errors)
    sample: str | None = None  # "all" answers (random strategy) or "control" pairs only
    gain: float | None = None  # their mean gain over the older version's constant prediction
    se: float | None = None  # its standard error, clustered by pair
    promised_gain: float | None = None  # the same on the older version's held-out answers
    promised_se: float | None = None
    z: float | None = None  # (gain - promised_gain) / combined standard error
    level: float | None = None  # this check's share of the study's false-alarm budget
    limit: float | None = None  # flagged when z < -limit


def drift_limit(level: float) -> float:
    """The one-sided normal quantile for a check's level (infinite at level 0)."""
    return float(norm.isf(level)) if level > 0 else float("inf")


def _later_answers(before: MetricVersion, after: MetricVersion, sample: str):
    """The answers after ``before``'s watermark up to ``after``'s, as the fit saw them, to pairs
    ``before`` never saw (no gold; control pairs only when ``sample`` is "control"): row
    differences, labels in [0, 1] and pair codes."""
    rows = list(
        PairJudgment.objects.filter(
            study_id=after.study_id,
            id__gt=before.judgment_watermark,
            id__lte=after.judgment_watermark,
            is_gold=False,
        )
        .exclude(annotator_id__in=(after.parameters or {}).get("excluded_annotators") or [])
        .values_list("item_a_id", "item_b_id", "item_a__row", "item_b__row", "label")
    )
    if sample == "control" and rows:
        keep = pair_control(*np.array([r[:2] for r in rows], dtype=np.int64).T)
        rows = [r for r, k in zip(rows, keep, strict=True) if k]
    if rows:
        seen = set(
            PairJudgment.objects.filter(
                study_id=after.study_id,
                id__lte=before.judgment_watermark,
                item_a_id__in={r[0] for r in rows},
                item_b_id__in={r[1] for r in rows},
            ).values_list("item_a_id", "item_b_id")
        )
        rows = [r for r in rows if r[:2] not in seen]
    if not rows:
        return np.empty((0, 0)), np.empty(0), np.empty(0, dtype=np.int64)
    item_a, item_b, row_a, row_b, labels = zip(*rows, strict=True)
    space = after.study.space
    clusters = np.unique(np.stack([item_a, item_b], axis=1), axis=0, return_inverse=True)[1]
    y = np.array([LABEL_Y[v] for v in labels])
    return space.vectors(row_a) - space.vectors(row_b), y, clusters.ravel()


def drift_check(before: MetricVersion, after: MetricVersion) -> DriftCheck:
    """How far ``after``'s data fall short of what ``before`` promised (``z``; None when not
    judged, with the reason in the note); not yet flagged: :func:`settle` gives it its level."""
    if before.method != MetricVersion.Method.EXPLORE:
        return DriftCheck(False, "FACE has no model of the answers: its drift is not judged")
    promise = (before.diagnostics or {}).get("drift_promise")
    if not promise:
        return DriftCheck(False, f"#{before.pk} has no held-out promise to judge against")
    answered = int((before.counts or {}).get("judgments_total") or 0)
    if answered < CHECK_MIN_VERSION_ANSWERS:
        return DriftCheck(
            False,
            f"#{before.pk} rests on {answered} answers; its held-out figure is judged from "
            f"{CHECK_MIN_VERSION_ANSWERS}",
        )
    sample = "control" if control_only(after.study.strategy) else "all"
    figure = promise.get(sample)
    if not figure:
        return DriftCheck(False, f"#{before.pk} held out no {sample} answers to judge against")
    differences, y, clusters = _later_answers(before, after, sample)
    if y.size < CHECK_MIN_ANSWERS:
        what = "answers" if sample == "all" else "answers to control pairs"
        return DriftCheck(
            False,
            f"{y.size} new {what} since #{before.pk}; {CHECK_MIN_ANSWERS} are needed to judge",
        )
    return judge(sigma_of(before), promise, differences, y, clusters, sample, before.pk)


def judge(sigma, promise, differences, y, clusters, sample, older, statistic="gain") -> DriftCheck:
    """The check's arithmetic, given what :func:`drift_check` read: the later answers (row
    differences, labels, pair codes) scored under the older version's stored ``sigma`` against
    its ``promise`` (``diagnostics["drift_promise"]``) on the ``sample`` ("all", "control");
    ``older``: that version's id, for the note. Not yet flagged (:func:`settle`).
    ``statistic`` "gain" is the flag's; "surprise" (``answer_surprises`` against the promise's
    ``surprise``) is the all-answers test ``benchmarks/drift.py`` measures beside it."""
    figure = promise[sample]
    d = np.maximum(np.einsum("ij,ij->i", differences @ sigma, differences), 0.0)
    flip = promise.get("flip_rate") or 0.0
    if statistic == "gain":
        gains = answer_gains(d, y, promise["rate"], flip)
    else:  # "surprise": the benchmark's all-answers test (not the flag)
        gains = answer_surprises(d, y, promise["rate"], flip)
        figure = {"gain": figure["surprise"], "se": figure["surprise_se"]}
    gain, se, z = gain_shortfall(gains, clusters, figure["gain"], figure["se"])
    what = "answers" if sample == "all" else "answers to control pairs"
    pairs = int(np.unique(clusters).size)
    note = (
        f"the {y.size} new {what} since #{older} ({pairs} pairs) gain {gain:+.3f} per answer "
        f"over its constant prediction, where its held-out answers promised "
        f"{figure['gain']:+.3f} (z = {z:.2f})"
    )
    numbers = (gain, se, figure["gain"], figure["se"], z)
    return DriftCheck(False, note, int(y.size), pairs, sample, *(float(v) for v in numbers))


def settle(check: DriftCheck, level: float | None) -> DriftCheck:
    """``check`` flagged or not at false-alarm ``level`` (its share of the study's budget);
    ``level`` None: a comparison shown, never flagged (the previous version's)."""
    if check.z is None:
        return check
    if level is None:
        return replace(check, note=check.note + "; shown, not flagged (see the window check)")
    limit = drift_limit(level)
    note = f"; flagged below {-limit:.2f}, this check's share {level:.2g} of the study's "
    note += "false-alarm rate"
    if sets_watch(check.sample, level, check.z):
        note += "; until the next check the sampler offers only control pairs"
    return replace(
        check,
        flagged=bool(check.z < -limit),
        level=float(level),
        limit=limit,
        note=check.note + note,
    )


def sets_watch(sample: str | None, level: float | None, z: float | None) -> bool:
    """Whether a check (its ``sample``, ``level``, ``z``) sets the watch (:func:`watching`): it
    flags (a level), compared control pairs (a non-random strategy) and fell below −WATCH_Z."""
    return level is not None and sample == "control" and z is not None and z < -WATCH_Z


def watch_check(*, study_id: int) -> dict | None:
    """The check that set the watch (:func:`watching`) with its version's id (``made_by``);
    None when the flag is not watching."""
    newest = (
        MetricVersion.objects.filter(
            study_id=study_id, method=MetricVersion.Method.EXPLORE, cohort=""
        )
        .filter(diagnostics__drift__has_key="spent_at")
        .order_by("-id")
        .values_list("id", "diagnostics__drift")
        .first()
    )
    made_by, drift = newest or (None, {})
    for name in ("window", "published"):
        check = ((drift or {}).get(name) or {}).get("check") or {}
        if sets_watch(check.get("sample"), check.get("level"), check.get("z")):
            return check | {"made_by": made_by}
    return None


def watching(*, study_id: int) -> bool:
    """The hook ``annotation.hooks.drift_watch``: whether the newest checks (``spent_at``) set
    the watch (:func:`sets_watch`); until the next ones every pick of a non-random strategy is
    a control pair (module docstring, "The watch")."""
    return watch_check(study_id=study_id) is not None


def _total(version: MetricVersion) -> int:
    return int((version.counts or {}).get("judgments_total") or 0)


def _spent_before(after: MetricVersion) -> int:
    """The answers at which the study's budget was last spent: the most ``spent_at`` among the
    method's earlier versions (0 when none judged anything)."""
    earlier = MetricVersion.objects.filter(
        study_id=after.study_id, method=after.method, id__lt=after.pk, cohort=""
    ).values_list("diagnostics__drift__spent_at", flat=True)
    return max((int(n) for n in earlier if n is not None), default=0)


def version_level(alarm_rate: float, answers: int, answers_before: int) -> float:
    """``spent_alpha(answers) − spent_alpha(answers_before)``, never below 0."""
    return max(0.0, spent_alpha(alarm_rate, answers) - spent_alpha(alarm_rate, answers_before))


def window_reference(after: MetricVersion) -> MetricVersion | None:
    """The newest ready version of ``after``'s method on at least ``WINDOW`` answers fewer: the
    older end of the window check, whose later answers are many enough to show a change."""
    versions = MetricVersion.objects.filter(
        study_id=after.study_id, method=after.method, status="ready", id__lt=after.pk, cohort=""
    ).order_by("-id")
    for version in versions.only("id", "counts"):
        if _total(version) <= _total(after) - WINDOW:
            return MetricVersion.objects.get(pk=version.pk)
    return None


def window_due(answers: int, parent_answers: int | None) -> bool:
    """Whether a version on ``answers`` (its previous on ``parent_answers``) makes the window
    check: when its answers pass a multiple of ``WINDOW_EVERY``."""
    return parent_answers is None or answers // WINDOW_EVERY > parent_answers // WINDOW_EVERY


def drift_record(before: MetricVersion | None, after: MetricVersion, level) -> dict | None:
    """One comparison as the worker stores it: the drift, the other version, the flag's test
    (``check``, settled at ``level``: :func:`settle`) and the flag; None without a drift."""
    moved = drift_between(before, after)
    if moved is None:
        return None
    check = settle(drift_check(before, after), level)
    return asdict(moved) | {"version": before.pk, "check": asdict(check), "flagged": check.flagged}


def drift_records(after: MetricVersion, published: MetricVersion | None, alarm_rate: float):
    """What the worker stores in ``diagnostics["drift"]`` for a new version: its comparisons
    with the previous, the published and (when due) the window version, ``flagged``, and
    ``spent_at`` when some check spent the study's budget (module docstring, "The rate")."""
    parent = after.parent
    due = window_due(_total(after), None if parent is None else _total(parent))
    others = {"previous": parent, "published": published}
    others["window"] = window_reference(after) if due else None
    checks = {
        name: (other, drift_check(other, after))
        for name, other in others.items()
        if name != "previous" and drift_between(other, after) is not None
    }
    judged = {other.pk for other, check in checks.values() if due and check.z is not None}
    budget = version_level(alarm_rate, _total(after), _spent_before(after))
    level = budget / len(judged) if judged else None  # between window checks: shown only
    found: dict = {"previous": drift_record(parent, after, None)}
    for name in ("published", "window"):
        found[name] = None
        if name in checks:
            other, check = checks[name]
            check = settle(check, level)
            moved = asdict(drift_between(other, after))
            found[name] = moved | {"version": other.pk, "check": asdict(check)}
            found[name]["flagged"] = check.flagged
    found["flagged"] = any(found[name] and found[name]["flagged"] for name in others)
    if judged:
        found["spent_at"] = _total(after)
    return found


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
