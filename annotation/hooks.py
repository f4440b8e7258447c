"""What annotation needs from the layer above it (learning), as hooks learning registers.

Annotation sits below learning and imports nothing of it. Three needs go upward, all through
this module, registered once by ``learning.apps.LearningConfig.ready``:

* **feedback changed → refit later.** Every write that changes a study's feedback (answers,
  undo, groups, imports, adjudications) calls :func:`feedback_changed` inside its transaction; learning's
  receiver queues a debounced refit after the commit.
* **the study's current metric**, for the sampler's ``uncertainty`` strategy, the group
  suggestions and the order of the disagreements to adjudicate (``annotation/review/``): :func:`current_metric` returns a :class:`StudyMetric` (distances and EXPLORE's
  P(comparable) under a fitted Sigma) or None when nothing is fitted or learning is absent.
* **whether the drift flag is watching**, for the sampler's control share: :func:`drift_watch`
  is true while the study's last drift check fell short of its promise by enough to look again
  with more control answers (``learning/versions/drift.py: watching``); False without learning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np


class StudyMetric(Protocol):
    """A fitted metric as the sampler and the suggestions use it."""

    version_id: int
    method: str  # "explore" or "face"
    label: str
    is_published: bool
    factor: np.ndarray  # W with Sigma = W Wᵀ (d × d)

    def squared_distances(self, differences: np.ndarray) -> np.ndarray:
        """Row-wise ``z^T Sigma z`` for the rows ``z`` of ``differences``."""

    def p_comparable(self, differences: np.ndarray) -> np.ndarray:
        """EXPLORE's model P(comparable) = 2 sigmoid(-z^T Sigma z), row-wise."""


FeedbackReceiver = Callable[..., None]  # (*, study_id: int) -> None
MetricSource = Callable[..., "StudyMetric | None"]  # (*, study_id: int, method: str | None)

_feedback_receivers: list[FeedbackReceiver] = []
_metric_source: list[MetricSource] = []
WatchSource = Callable[..., bool]  # (*, study_id: int) -> bool
_watch_source: list[WatchSource] = []


def on_feedback_changed(receiver: FeedbackReceiver) -> None:
    """Register ``receiver(study_id=...)``; called inside the writing transaction."""
    if receiver not in _feedback_receivers:
        _feedback_receivers.append(receiver)


def feedback_changed(*, study_id: int) -> None:
    for receiver in _feedback_receivers:
        receiver(study_id=study_id)


def provide_metric(source: MetricSource) -> None:
    """Register ``source(study_id=..., method=...)`` as the study's current metric."""
    _metric_source[:] = [source]


def current_metric(*, study_id: int, method: str | None = None) -> StudyMetric | None:
    """The study's metric: of ``method`` (``"explore"``, ``"face"``) or, with None, the
    published one of any method, else the latest fitted; None when there is none."""
    return _metric_source[0](study_id=study_id, method=method) if _metric_source else None


def provide_drift_watch(source: WatchSource) -> None:
    """Register ``source(study_id=...)`` as whether the study's drift flag is watching."""
    _watch_source[:] = [source]


def drift_watch(*, study_id: int) -> bool:
    """Whether the sampler should offer only control pairs until the study's next drift check
    (module docstring); False when learning is absent."""
    return bool(_watch_source[0](study_id=study_id)) if _watch_source else False
