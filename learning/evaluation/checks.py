"""Evaluate a ready version: its study's WEAT suites, drift against its parent and against the
published version, and the study's auto-publish checks. Results go into the version's
``diagnostics`` (``weat``, ``drift``, ``auto_publish``) and WeatResult rows.

Evaluation never fails a version: an error here is recorded as ``evaluation_error`` and the
version stays ready (its Sigma is sound; only a report is missing). It decides, and does not
act: :func:`version_evaluate` returns an :class:`Evaluation` whose ``publish`` says whether the
auto-publish checks passed; the refit (``learning.refits.service``) publishes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.db import DatabaseError

from learning.evaluation.informative import version_judge
from learning.evaluation.weat import weat_baseline, weat_evaluate_version
from learning.models import MetricVersion, StudyLearningSettings
from learning.versions.drift import drift_records
from learning.versions.selectors import version_published
from learning.versions.validity import INFORMATIVE, validity_of

logger = logging.getLogger(__name__)


def _weat(version: MetricVersion) -> dict:
    """The study's WEAT suites under the version's Sigma, and their Euclidean baseline (computed
    once per suite and space, then read from the database cache)."""
    suites = list(version.study.weat_suites.all())
    if not suites:
        return {"suites": 0}
    for suite in suites:
        weat_baseline(suite, version.study.space)
    results = weat_evaluate_version(version)
    return {
        "suites": len(suites),
        "tests": len(results),
        "significant": sum(1 for r in results if r.p_value < 0.05),
    }


def _auto_publish_failures(version: MetricVersion, learning: StudyLearningSettings) -> list[str]:
    diag = version.diagnostics
    failed = []
    if not version.informative:
        failed.append("not yet informative: " + diag["informative"]["missing"])
    validity = validity_of(version)  # what a publish needs (learning/versions/validity.py)
    if version.informative and validity["verdict"] != INFORMATIVE:
        failed.append(f"the verdict is {validity['verdict']}: {validity['needs']}")
    if (
        learning.auto_publish_require_converged
        and version.method == MetricVersion.Method.EXPLORE
        and not diag.get("converged")
    ):
        failed.append("the EXPLORE fit did not converge")
    if learning.auto_publish_min_auc is not None:
        auc = diag.get("heldout_auc")
        if auc is None and version.method == MetricVersion.Method.EXPLORE:
            failed.append("no held-out AUC (too few held-out pairs of both labels)")
        elif auc is not None and auc < learning.auto_publish_min_auc:
            failed.append(f"held-out AUC {auc:.3f} is below {learning.auto_publish_min_auc:.3f}")
    published = (diag.get("drift") or {}).get("published")
    if learning.auto_publish_block_on_drift and published and published.get("flagged"):
        failed.append(f"drift from the published version: {published['check']['note']}")
    if diag.get("evaluation_error"):
        failed.append("the evaluation failed")
    return failed


@dataclass(frozen=True)
class Evaluation:
    """The decision of an evaluation: publish (auto-publish is on and every check passed)."""

    publish: bool
    failed: list[str] = field(default_factory=list)  # the auto-publish checks that failed


def version_evaluate(version: MetricVersion, *, learning: StudyLearningSettings) -> Evaluation:
    """Evaluate a ready version and store the results on it; the auto-publish decision."""
    version_judge(version)  # informative or not: stored first, whatever the evaluation does
    update: dict = {}
    started = time.perf_counter()
    try:
        published = version_published(study_id=version.study_id, method=version.method)
        update["drift"] = drift_records(version, published, learning.drift_alarm_rate)
        update["weat"] = _weat(version)
    except DatabaseError:
        raise
    except Exception as error:
        logger.warning("evaluation of version %s failed", version.pk, exc_info=True)
        update["evaluation_error"] = f"{type(error).__name__}: {error}"
    update["evaluation_seconds"] = round(time.perf_counter() - started, 4)
    version.diagnostics = version.diagnostics | update
    decision = Evaluation(publish=False)
    if learning.auto_publish:
        failed = _auto_publish_failures(version, learning)
        version.diagnostics["auto_publish"] = {"published": not failed, "failed": failed}
        decision = Evaluation(publish=not failed, failed=failed)
    MetricVersion.objects.filter(pk=version.pk).update(diagnostics=version.diagnostics)
    return decision
