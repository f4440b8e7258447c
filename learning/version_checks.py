"""Evaluate a ready version: WEAT suite, drift against its parent and the published version,
and the study's auto-publish checks."""

from __future__ import annotations

import logging

from learning.models import MetricVersion, StudyLearningSettings

logger = logging.getLogger(__name__)


def version_evaluate(version: MetricVersion, *, learning: StudyLearningSettings) -> bool:
    """Store the evaluation in the version's diagnostics; True when it was auto-published."""
    return False
