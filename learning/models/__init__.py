"""learning's models, one module per subject, all re-exported here (``learning.models.X``):
metric versions, WEAT suites and results, learning settings and refit state
(:mod:`learning.models.metrics`); model audits and their violations
(:mod:`learning.models.audits`); cohort comparisons (:mod:`learning.models.cohorts`)."""

from .audits import AuditSettings, AuditStatus, AuditViolation, ModelAudit
from .cohorts import CohortReport
from .metrics import (
    MetricVersion,
    MetricVersionQuerySet,
    RefitState,
    StudyLearningSettings,
    VersionStatus,
    WeatResult,
    WeatSuite,
    WeatTest,
)

__all__ = [
    "AuditSettings",
    "AuditStatus",
    "AuditViolation",
    "CohortReport",
    "MetricVersion",
    "MetricVersionQuerySet",
    "ModelAudit",
    "RefitState",
    "StudyLearningSettings",
    "VersionStatus",
    "WeatResult",
    "WeatSuite",
    "WeatTest",
]
