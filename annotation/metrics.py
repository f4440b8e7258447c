"""The study's current metrics, as cached factors, and distances computed with them.

A Mahalanobis metric ``d(x, y) = (x - y)^T Sigma (x - y)`` is evaluated through a factor ``W``
with ``Sigma = W W^T`` (from the eigendecomposition, negative eigenvalues clipped), so that
``d = ||(x - y) W||^2``: one matrix product for any number of pairs.
"""

from __future__ import annotations

import threading

import numpy as np

from learning.models import MetricVersion

from .models import Study

_factor_cache: dict[int, tuple[str, np.ndarray]] = {}
_factor_lock = threading.Lock()


def metric_version_current(*, study: Study) -> MetricVersion | None:
    """The published version of the study (any method), else the latest ready one."""
    return (
        MetricVersion.objects.filter(study=study, status=MetricVersion.Status.READY)
        .exclude(sigma="")
        .order_by("-is_published", "-id")
        .first()
    )


def metric_version_latest(*, study: Study, method: str) -> MetricVersion | None:
    """The latest ready version of one method (``MetricVersion.Method``)."""
    return (
        MetricVersion.objects.filter(study=study, method=method, status=MetricVersion.Status.READY)
        .exclude(sigma="")
        .order_by("-id")
        .first()
    )


def metric_factor(version: MetricVersion) -> np.ndarray:
    """``W`` with ``Sigma = W W^T`` for a version, cached per process by id and checksum."""
    key = version.sigma_sha256 or version.sigma.name
    with _factor_lock:
        hit = _factor_cache.get(version.pk)
    if hit and hit[0] == key:
        return hit[1]
    sigma = np.asarray(version.load_sigma(), dtype=np.float64)
    sigma = (sigma + sigma.T) / 2
    values, vectors = np.linalg.eigh(sigma)
    factor = vectors * np.sqrt(np.clip(values, 0.0, None))
    with _factor_lock:
        _factor_cache[version.pk] = (key, factor)
    return factor


def squared_distances(differences: np.ndarray, factor: np.ndarray | None) -> np.ndarray:
    """Row-wise ``z^T Sigma z`` (Euclidean ``z^T z`` when ``factor`` is None)."""
    projected = differences if factor is None else differences @ factor
    return np.einsum("ij,ij->i", projected, projected)


def p_comparable(squared: np.ndarray) -> np.ndarray:
    """EXPLORE's model ``P(comparable) = 2 sigmoid(-d) = 2 / (1 + exp(d))``, stable for large d."""
    return 2.0 * np.exp(-np.logaddexp(0.0, squared))
