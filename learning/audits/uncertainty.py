"""The metric's uncertainty in an audit: the same audit under each bootstrap refit of the
version's Σ (``learning/refits/bootstrap.py``: its own recipe on resamples of the study's answers
drawn by pair), so that each headline figure has its range across plausible metrics beside its
range across items (the audit's own interval, a bootstrap over items under the one Σ).

Under each refit Σ_b, as the audit itself (``learning/audits/run.py: audit_compute``): the k
nearest neighbours in φW_b (the exact search), ε by the audit's rule (given; EXPLORE's
P(comparable) = ½, which does not depend on Σ; else the median k-th neighbour distance under
Σ_b), the same L; then the violation rate, mean and worst gap, consistency, decision flips, the
sampled all-pairs rate within ε and the share of pairs within ε. Per figure: the 2.5–97.5 %
quantiles over the refits (``low``, ``high``), their ``min`` and ``max``, the audit's estimate and
its interval across items, and ``metric_wider`` when the range across metrics is the wider. Two
verdicts that may flip across plausible metrics: whether the model violates at all (``verdict``:
refits under which some pair within ε violates), and each kept violation of the audit (the
worst first): under how many refits it still is one (within ε_b and past L·d_b). The twins do not
depend on Σ: their figures are the same under every refit (said, not recomputed).

Runs in the worker after the audit is stored (its figures are shown meanwhile), renewing the
audit's lease; a run cut short is taken over by the sweep (``learning/audits/run.py``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from datetime import timedelta

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from learning.audits import search
from learning.audits.curves import SAMPLED_PAIRS
from learning.audits.inputs import audit_input, audit_vectors
from learning.core.audit import GAP_TOL, comparable_radius, item_statistics, metric_factor
from learning.core.fairness.curves import all_pairs_rate
from learning.models import AuditStatus, MetricVersion, ModelAudit
from learning.refits.bootstrap import NoRecipe, version_refits

logger = logging.getLogger(__name__)

FIGURES = (
    "violation_rate",
    "mean_gap",
    "worst_gap",
    "consistency",
    "decision_flip",
    "all_pairs_rate",
    "within_share",
)
WORST_LISTED = 100  # kept violations whose count of refits is listed, worst first


def audit_epsilon(method: str, given: float | None, kth: np.ndarray) -> tuple[float, str]:
    """ε by the audit's rule (``learning/audits/run.py``'s module docstring); ``kth``: each
    item's distance to its k-th neighbour under the metric."""
    if given is not None:
        return float(given), "given"
    if method == MetricVersion.Method.EXPLORE:
        return comparable_radius(0.5), "EXPLORE: P(comparable) = 1/2"
    positive = kth[kth > 0]
    return (float(np.median(positive)) if positive.size else 1.0), (
        "median distance to the k-th Σ-neighbour"
    )


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else math.nan


def figures_under(
    sigma: np.ndarray,
    *,
    vectors: np.ndarray,
    scores: np.ndarray,
    decisions: np.ndarray | None,
    method: str,
    k: int,
    epsilon: float | None,
    lipschitz: float,
    kept: tuple[np.ndarray, np.ndarray],
    knn=search.knn,
) -> tuple[dict, np.ndarray]:
    """The audit's headline figures under ``sigma`` and whether each kept violation (``kept``:
    point indices of its two sides) is one under it."""
    points = vectors @ metric_factor(sigma)
    idx, dist = knn(points, k, threads=settings.AUDIT_THREADS)
    eps, _ = audit_epsilon(method, epsilon, dist[:, -1])
    stats = item_statistics(
        idx, dist, scores, epsilon=eps, lipschitz=lipschitz, decisions=decisions
    )
    violations, within = float(stats["v"].sum()), float(stats["n"].sum())
    worst = float(stats["m"].max(initial=-np.inf))
    sampled = all_pairs_rate(points, scores, epsilon=eps, lipschitz=lipschitz, m=SAMPLED_PAIRS)
    out = {
        "violation_rate": _ratio(violations, within),
        "mean_gap": _ratio(float(stats["g"].sum()), violations),
        "worst_gap": worst if math.isfinite(worst) else math.nan,
        "consistency": float(1.0 - stats["c"].mean()),
        "decision_flip": float(stats["f"].mean()) if "f" in stats else math.nan,
        "all_pairs_rate": sampled.violation_rate.estimate,
        "within_share": sampled.within_share.estimate,
        "violations": violations,
        "epsilon": eps,
    }
    first, second = kept
    d = np.linalg.norm(points[first] - points[second], axis=1)
    gap = np.abs(scores[first] - scores[second]) - lipschitz * d
    return out, (d <= eps) & (gap > GAP_TOL)


def _audit_figure(summary: dict, name: str) -> dict | None:
    """The audit's own estimate and interval across items of figure ``name`` (under Σ)."""
    if name in ("all_pairs_rate", "within_share"):
        sampled = ((summary.get("curves") or {}).get("sigma") or {}).get("all_pairs") or {}
        value = sampled.get("violation_rate" if name == "all_pairs_rate" else "within_share")
    else:
        value = (summary.get("sigma") or {}).get(name)
    return value if isinstance(value, dict) else None


def _none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def uncertainty_summary(values: list[dict], holds: np.ndarray, summary: dict) -> dict:
    """The ranges across the refits' figures ``values`` beside the audit's ``summary``;
    ``holds``: per kept violation (worst first), the refits under which it is one."""
    out: dict = {"figures": {}}
    for name in FIGURES:
        own = _audit_figure(summary, name)
        got = np.array([v[name] for v in values], dtype=np.float64)
        got = got[np.isfinite(got)]
        if own is None or not got.size:
            continue
        low, high = np.quantile(got, [0.025, 0.975])
        across_items = (own.get("low"), own.get("high"))
        wider = None
        if None not in across_items:
            wider = bool(high - low > across_items[1] - across_items[0])
        out["figures"][name] = {
            "audit": own.get("estimate"),
            "interval": list(across_items),
            "low": _none(low),
            "high": _none(high),
            "min": _none(got.min()),
            "max": _none(got.max()),
            "metric_wider": wider,
        }
    fitted = len(values)
    violating = int(sum(v["violations"] > 0 for v in values))
    out["verdict"] = {
        "violating_under": violating,
        "of": fitted,
        "flips": 0 < violating < fitted,
        "epsilon": [
            _none(min(v["epsilon"] for v in values)),
            _none(max(v["epsilon"] for v in values)),
        ]
        if values
        else None,
    }
    out["kept_violations"] = {
        "pairs": int(holds.size),
        "hold_under_all": _ratio(float(np.sum(holds == fitted)), holds.size),
        "hold_under_none": _ratio(float(np.sum(holds == 0)), holds.size),
        "mean_share": _ratio(float(holds.sum()), holds.size * fitted),
        "worst": holds[:WORST_LISTED].astype(int).tolist(),
    }
    out["counterfactual"] = "the twins' figures do not depend on Σ: the same under every refit"
    return out


def audit_under_refits(
    refits,
    *,
    vectors: np.ndarray,
    predictions,
    method: str,
    k: int,
    epsilon: float | None,
    lipschitz: float,
    kept: tuple[np.ndarray, np.ndarray],
    summary: dict,
    progress=None,
    knn=search.knn,
) -> dict:
    """``uncertainty_summary`` of the audit under each Σ of ``refits`` (an iterable)."""
    values, holds = [], np.zeros(kept[0].size, dtype=np.int64)
    for n, sigma in enumerate(refits):
        fig, hold = figures_under(
            sigma,
            vectors=vectors,
            scores=predictions.scores,
            decisions=predictions.decisions,
            method=method,
            k=k,
            epsilon=epsilon,
            lipschitz=lipschitz,
            kept=kept,
            knn=knn,
        )
        values.append(fig)
        holds += hold
        if progress is not None:
            progress(n + 1)
    return uncertainty_summary(values, holds, summary)


# --- In the worker: after the audit is stored, or taken over by the sweep ---------------------


def _write(audit, state: dict) -> None:
    """The audit's uncertainty state, its lease renewed (only this run's: ``started_at``)."""
    ModelAudit.objects.filter(pk=audit.pk, started_at=audit.started_at).update(
        uncertainty=state,
        lease_until=timezone.now() + timedelta(seconds=settings.AUDIT_LEASE_SECONDS),
    )


def uncertainty_claim(audit_id: int) -> ModelAudit | None:
    """A done audit whose uncertainty run was cut short (its lease ran out), claimed."""
    now = timezone.now()
    claimed = ModelAudit.objects.filter(
        pk=audit_id,
        status=AuditStatus.DONE,
        uncertainty__status="running",
        lease_until__lt=now,
    ).update(lease_until=now + timedelta(seconds=settings.AUDIT_LEASE_SECONDS), started_at=now)
    if not claimed:
        return None
    return ModelAudit.objects.select_related("study__space", "version").get(pk=audit_id)


def uncertainty_again(audit_id: int) -> str:
    """A done audit whose metric-uncertainty run was cut short: run that part again."""
    audit = uncertainty_claim(audit_id)
    if audit is None:
        return "skipped"
    with contextlib.ExitStack() as files:  # the score file's local copy (media in a bucket)
        data = audit_input(audit, files)
        kept = kept_positions_of(audit, data)
        lipschitz = float(audit.summary.get("lipschitz") or 1.0)
        vectors = audit_vectors(audit, data)
        return uncertainty_run(audit, vectors=vectors, data=data, kept=kept, lipschitz=lipschitz)


def kept_positions_of(audit, data) -> tuple[np.ndarray, np.ndarray]:
    """The audit's kept violations (worst first) as point indices into its audited points
    (items, then new records), read back from its rows."""
    position = {int(i): n for n, i in enumerate(data.item_ids.tolist())}
    n_items = data.item_ids.size
    position_new = {key: n_items + n for n, key in enumerate(data.new_keys)}
    rows = audit.violations.order_by("rank").values_list("item_a_id", "key_a", "item_b_id", "key_b")
    first, second = [], []
    for a, key_a, b, key_b in rows:
        first.append(position[a] if a is not None else position_new[key_a])
        second.append(position[b] if b is not None else position_new[key_b])
    return np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)


def uncertainty_run(audit, *, vectors, data, kept, lipschitz: float, knn=search.knn) -> str:
    """Refit the version's Σ (or read its cached refits), audit under each, store the result
    on the audit; ``done``, ``unavailable`` (no recipe, no refit fitted) or ``failed``."""
    n = settings.AUDIT_METRIC_REFITS
    state = {"status": "running", "refits": n, "done": 0, "stage": "refitting Σ"}
    _write(audit, state)
    try:
        if n < 2:
            raise NoRecipe("turned off (AUDIT_METRIC_REFITS = 0)")
        refits = version_refits(
            audit.version,
            progress=lambda done, total: _write(audit, state | {"fitted_so_far": done}),
        )
        if not refits.fitted:
            raise NoRecipe(f"none of its {refits.asked} refits could be fitted")
        state |= {"stage": "auditing under each refit"}
        mark = time.perf_counter()
        result = audit_under_refits(
            refits,
            vectors=vectors,
            predictions=data,
            method=audit.version.method,
            k=audit.k,
            epsilon=audit.epsilon,
            lipschitz=lipschitz,
            kept=kept,
            summary=audit.summary,
            progress=lambda done: _write(audit, state | {"done": done}),
            knn=knn,
        )
        result["audit_seconds"] = round(time.perf_counter() - mark, 2)  # the refits': as_dict
        final, outcome = {"status": "done", **refits.as_dict(), **result}, "done"
    except NoRecipe as exc:
        final, outcome = (
            {"status": "unavailable", "reason": f"No metric uncertainty: {exc}."},
            ("unavailable"),
        )
    except (ValueError, OSError, RuntimeError, SoftTimeLimitExceeded) as exc:
        logger.warning("audit %s: metric uncertainty failed: %s", audit.pk, exc)
        if isinstance(exc, SoftTimeLimitExceeded):
            exc = RuntimeError(
                "the refits took longer than the worker's time limit; those fitted are kept and "
                "the next audit of this version continues them"
            )
        final, outcome = {"status": "failed", "reason": str(exc)[:500]}, "failed"
    ModelAudit.objects.filter(pk=audit.pk, started_at=audit.started_at).update(
        uncertainty=final, lease_until=None
    )
    return outcome
