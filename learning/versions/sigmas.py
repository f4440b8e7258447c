"""Reading stored Sigmas: the one in-process cache (every reader of a version's Sigma goes
through :func:`sigma_of`), its factor, and the study's current metric for the layer below (the
sampler and the group suggestions, through ``annotation.hooks``).

Sigma files never change once a version is ready (a new fit is a new file), so a Sigma is cached
by (media name, sha256); its factor ``W`` (``Sigma = W Wᵀ``) likewise.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from common import storage
from learning.core.explore import p_comparable
from learning.core.psd import psd_factor
from learning.models import MetricVersion
from learning.versions import selectors


@lru_cache(maxsize=64)
def sigma_cached(name: str, sha256: str) -> np.ndarray:
    """A stored Sigma by its media name (local folder or bucket) and sha256."""
    sigma = np.load(io.BytesIO(storage.read_bytes(name)), allow_pickle=False)
    sigma.setflags(write=False)
    return sigma


def sigma_of(version: MetricVersion) -> np.ndarray:
    """The version's Sigma (read-only array), read once per process."""
    return sigma_cached(version.sigma.name, version.sigma_sha256)


@lru_cache(maxsize=64)
def _factor_cached(name: str, sha256: str) -> np.ndarray:
    factor = psd_factor(sigma_cached(name, sha256))
    factor.setflags(write=False)
    return factor


@dataclass(frozen=True)
class FittedMetric:
    """A ready version's Sigma as ``annotation.hooks.StudyMetric``."""

    version_id: int
    method: str
    label: str
    is_published: bool
    factor: np.ndarray  # W with Sigma = W Wᵀ

    def squared_distances(self, differences: np.ndarray) -> np.ndarray:
        projected = differences @ self.factor
        return np.einsum("ij,ij->i", projected, projected)

    def p_comparable(self, differences: np.ndarray) -> np.ndarray:
        return p_comparable(self.squared_distances(differences))


def fitted_metric(version: MetricVersion) -> FittedMetric:
    return FittedMetric(
        version_id=version.pk,
        method=version.method,
        label=version.label or version.method,
        is_published=version.is_published,
        factor=_factor_cached(version.sigma.name, version.sigma_sha256),
    )


def study_metric(*, study_id: int, method: str | None = None) -> FittedMetric | None:
    """The hook ``annotation.hooks.current_metric``: the study's current metric
    (``selectors.version_current``; with ``method``, the newest informative version of it)."""
    version = selectors.version_current(study_id=study_id, method=method)
    return None if version is None else fitted_metric(version)
