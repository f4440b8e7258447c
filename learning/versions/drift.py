"""Drift between two metric versions, and when it is flagged: the one definition of each.

The numbers come from the numerical core (:func:`learning.core.drift.drift`); here they become a
:class:`Drift` (JSON-ready, angles in degrees), cached per pair of Sigma files (a Sigma file
never changes once its version is ready). The worker stores the drift of each new version to its
previous and to the published version in ``diagnostics["drift"]`` (:func:`drift_record`); pages
read it from there (:func:`drift_of`) and compute only pairs the worker did not store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import lru_cache

import numpy as np

from learning.core.drift import drift as core_drift
from learning.models import MetricVersion

from .sigmas import sigma_cached


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


def drift_flagged(moved: Drift | None, threshold: float) -> bool:
    """The drift flag: the operator-norm change exceeds the study's threshold."""
    return moved is not None and moved.operator_norm > threshold


def drift_record(
    before: MetricVersion | None, after: MetricVersion, threshold: float
) -> dict | None:
    """What the worker stores in ``diagnostics["drift"]``: the drift, the other version, the flag."""
    moved = drift_between(before, after)
    if moved is None:
        return None
    return asdict(moved) | {"version": before.pk, "flagged": drift_flagged(moved, threshold)}


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
