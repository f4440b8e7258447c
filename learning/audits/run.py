"""Running an audit in the worker: claim it, search the neighbours under Σ and under the
Euclidean metric, compute the figures, store the summary and the worst violations at once.

Idempotent (the task is acknowledged late): a done or failed audit is left alone; a running one
is taken over only when its lease has expired (its worker died); the results are written in one
transaction, after checking the claim is still this run's, replacing anything a dead run left.

Defaults (never from the audited scores, so two models' audits compare figure for figure):
``L = 1`` (for probabilities, one unit of score per unit of d_Σ); ``ε`` = for an EXPLORE metric,
the distance at which its own response model says "comparable" with probability ½
(``learning.core.audit.comparable_radius``, √ln 3 ≈ 1.05), for any other metric the median
distance to the k-th Σ-neighbour. The Euclidean figures beside them use ``‖φ(x) − φ(x')‖``
scaled by one constant so that its median neighbour distance equals Σ's
(``learning.core.audit.scale_to_match``), and the same ε and L.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.events import study_event
from annotation.models import WebhookEvent
from learning.audits import search
from learning.audits.curves import further_figures
from learning.audits.inputs import Predictions, audit_input, audit_vectors, new_record_fields
from learning.audits.uncertainty import audit_epsilon, uncertainty_again, uncertainty_run
from learning.core.audit import (
    field_shares,
    metric_factor,
    neighbour_figures,
    scale_to_match,
    violating_pairs,
)
from learning.models import AuditStatus, AuditViolation, ModelAudit
from learning.versions.sigmas import sigma_of
from spaces.models import Item
from spaces.records.featuremap import field_blocks

logger = logging.getLogger(__name__)
SHARE_MIN = 0.005  # shares below this are not stored
PROGRESS_EVERY = 0.5  # seconds between progress writes


def _claim(audit_id: int) -> ModelAudit | None:
    now = timezone.now()
    lease = now + timedelta(seconds=settings.AUDIT_LEASE_SECONDS)
    open_ = Q(status=AuditStatus.QUEUED) | Q(status=AuditStatus.RUNNING, lease_until__lt=now)
    claimed = ModelAudit.objects.filter(open_, pk=audit_id).update(
        status=AuditStatus.RUNNING,
        lease_until=lease,
        started_at=now,
        progress=0.0,
        stage="reading the scores",
        error="",
    )
    if not claimed:
        return None
    return ModelAudit.objects.select_related("study__space", "version").get(pk=audit_id)


class _Progress:
    """Writes stage and share done (and renews the lease) at most every PROGRESS_EVERY s."""

    def __init__(self, audit: ModelAudit):
        self.audit, self.last = audit, 0.0

    def __call__(self, stage: str, share: float, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_EVERY:
            return
        self.last = now
        ModelAudit.objects.filter(pk=self.audit.pk, started_at=self.audit.started_at).update(
            stage=stage,
            progress=round(min(max(share, 0.0), 1.0), 3),
            lease_until=timezone.now() + timedelta(seconds=settings.AUDIT_LEASE_SECONDS),
        )

    def part(self, stage: str, low: float, high: float):
        return lambda share: self(stage, low + (high - low) * share)


class _Quiet(_Progress):
    """No progress to report (the benchmark, the tests of the numbers)."""

    def __init__(self):
        pass

    def __call__(self, stage: str, share: float, *, force: bool = False) -> None:
        return None


def kept_positions(gaps: np.ndarray, limit: int) -> np.ndarray:
    """Which violations (positions in worst-first order) are stored: the first ``limit``, and
    the ``limit // 4`` of largest gap wherever they rank (ascending positions)."""
    by_gap = np.argsort(-gaps, kind="stable")[: limit // 4]
    return np.union1d(np.arange(min(limit, gaps.size)), by_gap).astype(np.int64)


@dataclass(frozen=True)
class Computed:
    summary: dict
    pairs: object  # learning.core.audit.ViolatingPairs, the stored ones
    ranks: np.ndarray  # their ranks among all violations (1 = worst)
    total_pairs: int
    euclidean: np.ndarray  # scaled ‖φ(a) − φ(b)‖ of the stored pairs
    shares: np.ndarray  # (m, fields)
    differing: np.ndarray  # (m, fields) bool
    fields: list[str]


def _both_searches(sigma_points, points, k: int, threads: int, progress, timings: dict, knn):
    """The Σ and the Euclidean neighbour searches: side by side in two threads (faiss releases
    the GIL) with ``threads // 2`` search threads each, or one after the other with one thread.
    Progress is written from this thread only (a worker thread would open its own database
    connection). Sets ``timings["search_sigma"]``, ``["search_euclidean"]`` (each search's own
    wall time) and ``["search"]`` (both, wall)."""
    started = time.perf_counter()
    shares = {"sigma": 0.0, "euclidean": 0.0}

    def one(name: str, x: np.ndarray, each: int):
        mark = time.perf_counter()
        found = knn(x, k, threads=each, progress=lambda s: shares.__setitem__(name, s))
        timings[f"search_{name}"] = time.perf_counter() - mark
        return found

    progress("neighbours under Σ and Euclidean", 0.05, force=True)
    if threads < 2:
        result = one("sigma", sigma_points, 1), one("euclidean", points, 1)
    else:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="audit-search") as pool:
            jobs = [
                pool.submit(one, "sigma", sigma_points, threads // 2),
                pool.submit(one, "euclidean", points, threads - threads // 2),
            ]
            while wait(jobs, timeout=PROGRESS_EVERY).not_done:
                done = (shares["sigma"] + shares["euclidean"]) / 2
                progress("neighbours under Σ and Euclidean", 0.05 + 0.8 * done)
            result = jobs[0].result(), jobs[1].result()
    timings["search"] = time.perf_counter() - started
    return result


def audit_compute(
    *,
    vectors: np.ndarray,
    sigma: np.ndarray,
    predictions: Predictions,
    method: str,
    k: int,
    epsilon: float | None,
    lipschitz: float | None,
    spec: dict | None,
    progress=None,
    knn=search.knn,
    delta: float | None = None,
) -> Computed:
    """The audit's numbers (no database): see the module docstring. ``knn``: the neighbour
    search (``learning.audits.search.knn``'s signature; the tests pass a brute-force one)."""
    progress = progress or _Quiet()
    timings = {}
    factor = metric_factor(sigma)
    (idx_s, dist_s), (idx_e, dist_e) = _both_searches(
        vectors @ factor, vectors, k, settings.AUDIT_THREADS, progress, timings, knn
    )
    mark = time.perf_counter()
    progress("figures", 0.85, force=True)
    epsilon, eps_rule = audit_epsilon(method, epsilon, dist_s[:, -1])
    lip_rule = "given" if lipschitz is not None else "default (1 score unit per unit of d_Σ)"
    lipschitz = 1.0 if lipschitz is None else lipschitz
    scale = scale_to_match(dist_s, dist_e)
    common = {"epsilon": epsilon, "lipschitz": lipschitz, "decisions": predictions.decisions}
    n_boot = settings.AUDIT_BOOTSTRAP
    sigma_fig = neighbour_figures(idx_s, dist_s, predictions.scores, n_boot=n_boot, **common)
    eucl_fig = neighbour_figures(idx_e, dist_e * scale, predictions.scores, n_boot=n_boot, **common)
    found = violating_pairs(idx_s, dist_s, predictions.scores, epsilon=epsilon, lipschitz=lipschitz)
    positions = kept_positions(found.gap, settings.AUDIT_MAX_STORED_VIOLATIONS)
    stored = found.take(positions)
    diff = vectors[stored.first] - vectors[stored.second]
    fields, starts = field_blocks(spec)
    shares = field_shares(diff, factor, starts) if fields else np.zeros((len(stored), 0))
    differing = (
        np.add.reduceat(np.abs(diff) > 1e-12, starts, axis=1) > 0
        if fields and len(stored)
        else np.zeros((len(stored), len(fields)), dtype=bool)
    )
    timings["figures"] = time.perf_counter() - mark
    further = further_figures(
        predictions=predictions,
        delta=delta,
        n_boot=n_boot,
        graphs=((idx_s, dist_s), (idx_e, dist_e * scale)),
        points=(vectors @ factor, vectors * scale),
        epsilon=epsilon,
        lipschitz=lipschitz,
        timings=timings,
    )
    summary = {
        "items": predictions.count,
        "new_records": len(predictions.new_keys),
        "k": k,
        "epsilon": epsilon,
        "epsilon_rule": eps_rule,
        "lipschitz": lipschitz,
        "lipschitz_rule": lip_rule,
        "euclidean_scale": scale,
        "bootstrap": n_boot,
        "search": search.backend(),
        "rank": int(factor.shape[1]),
        "violating_pairs": len(found),
        "stored": len(stored),
        "sigma": sigma_fig.as_dict(),
        "euclidean": eucl_fig.as_dict(),
        **further,
        "seconds": {k_: round(v, 3) for k_, v in timings.items()},
    }
    return Computed(
        summary=summary,
        pairs=stored,
        ranks=positions + 1,
        total_pairs=len(found),
        # on the summary's scale (the Euclidean figures' distances), as the page says
        euclidean=scale * np.linalg.norm(diff, axis=1) if len(stored) else np.zeros(0),
        shares=shares,
        differing=differing,
        fields=fields,
    )


def _keys(item_ids: np.ndarray) -> dict[int, str]:
    keys: dict[int, str] = {}
    ids = [int(i) for i in np.unique(item_ids)]
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        keys.update(Item.objects.filter(pk__in=chunk).values_list("id", "key"))
    return keys


def _violation_rows(audit: ModelAudit, data: Predictions, result: Computed) -> list[AuditViolation]:
    n_items = data.item_ids.size
    pairs = result.pairs
    involved = np.concatenate([pairs.first, pairs.second])
    keys = _keys(data.item_ids[involved[involved < n_items]])
    records = new_record_fields(
        data.new_records, np.unique(involved[involved >= n_items]) - n_items
    )
    labels = data.decision_labels

    def side(index: int) -> tuple[int | None, str, dict | None]:
        if index < n_items:
            pk = int(data.item_ids[index])
            return pk, keys.get(pk, ""), None
        return None, data.new_keys[index - n_items], records[index - n_items]

    rows = []
    pairs_ij = zip(pairs.first.tolist(), pairs.second.tolist(), strict=True)
    for m, (i, j) in enumerate(pairs_ij):
        a, b = side(i), side(j)
        if a[0] is not None and b[0] is not None and a[0] > b[0]:  # canonical: smaller id first
            i, j, a, b = j, i, b, a
        shares = {
            f: round(float(s), 4)
            for f, s in zip(result.fields, result.shares[m], strict=True)
            if math.isfinite(s) and abs(s) >= SHARE_MIN
        }
        differing = [f for f, d in zip(result.fields, result.differing[m], strict=True) if d]
        decisions = data.decisions
        rows.append(
            AuditViolation(
                audit=audit,
                rank=int(result.ranks[m]),
                item_a_id=a[0],
                item_b_id=b[0],
                key_a=a[1],
                key_b=b[1],
                record_a=a[2],
                record_b=b[2],
                distance=float(pairs.distance[m]),
                euclidean=float(result.euclidean[m]),
                score_a=float(data.scores[i]),
                score_b=float(data.scores[j]),
                gap=float(pairs.gap[m]),
                needed=float(pairs.needed[m]),
                decision_a=labels[decisions[i]] if decisions is not None else "",
                decision_b=labels[decisions[j]] if decisions is not None else "",
                differing=f",{','.join(differing)}," if differing else "",
                shares=shares,
            )
        )
    return rows


def audit_run(*, audit_id: int) -> str:
    """Run audit ``audit_id`` if it is open: ``done``, ``failed``, or ``skipped`` (done, failed,
    gone, or running elsewhere under a live lease)."""
    audit = _claim(audit_id)
    if audit is None:
        return uncertainty_again(audit_id)
    started = time.perf_counter()
    progress = _Progress(audit)
    files = contextlib.ExitStack()  # the score file's local copy (media in a bucket)
    try:
        data = audit_input(audit, files, progress.part("reading the scores", 0.0, 0.05))
        version, vectors = audit.version, audit_vectors(audit, data)
        result = audit_compute(
            vectors=vectors,
            sigma=sigma_of(version),
            predictions=data,
            method=version.method,
            k=audit.k,
            epsilon=audit.epsilon,
            lipschitz=audit.lipschitz,
            spec=audit.study.space.feature_map,
            progress=progress,
            delta=audit.delta,
        )
        progress("storing the violations", 0.9, force=True)
        mark = time.perf_counter()
        rows = _violation_rows(audit, data, result)
        with transaction.atomic():
            mine = ModelAudit.objects.select_for_update().filter(
                pk=audit.pk, status=AuditStatus.RUNNING, started_at=audit.started_at
            )
            if not mine.exists():
                return "skipped"  # taken over after this run's lease expired
            AuditViolation.objects.filter(audit=audit).delete()
            AuditViolation.objects.bulk_create(rows, batch_size=2000)
            result.summary["seconds"]["store"] = round(time.perf_counter() - mark, 3)
            seconds = time.perf_counter() - started
            result.summary["seconds"]["total"] = round(seconds, 3)
            mine.update(
                status=AuditStatus.DONE,
                stage="",
                progress=1.0,
                summary=result.summary,
                violation_count=result.total_pairs,
                seconds=seconds,
                finished_at=timezone.now(),
                lease_until=timezone.now() + timedelta(seconds=settings.AUDIT_LEASE_SECONDS),
                uncertainty={"status": "running", "refits": settings.AUDIT_METRIC_REFITS},
            )
            study_event(
                study_id=audit.study_id,
                event=WebhookEvent.AUDIT_DONE,
                data={"audit": audit.pk, "name": audit.name, "violations": result.total_pairs},
            )
        audit.summary = result.summary  # then the same audit under plausible metrics
        kept = (result.pairs.first, result.pairs.second)
        lipschitz = float(result.summary["lipschitz"])
        uncertainty_run(audit, vectors=vectors, data=data, kept=kept, lipschitz=lipschitz)
        return "done"
    except (ValueError, OSError, RuntimeError, SoftTimeLimitExceeded) as exc:  # say why
        logger.warning("audit %s failed: %s", audit_id, exc)
        if isinstance(exc, SoftTimeLimitExceeded):
            exc = RuntimeError("the audit took longer than the worker's time limit")
        ModelAudit.objects.filter(pk=audit.pk, started_at=audit.started_at).update(
            status=AuditStatus.FAILED,
            error=str(exc)[:2000],
            stage="",
            finished_at=timezone.now(),
            lease_until=None,
        )
        return "failed"
    except BaseException:  # a passing error (database, broker): give the audit back, retry
        with contextlib.suppress(Exception):
            ModelAudit.objects.filter(pk=audit.pk, started_at=audit.started_at).update(
                status=AuditStatus.QUEUED, lease_until=None
            )
        raise
    finally:
        files.close()
