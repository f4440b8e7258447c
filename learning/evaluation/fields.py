"""A record study's metric in the team's words: each field's weight, the fields it ignores, the
fields two versions differ on.

The fields are the blocks of φ's columns (``spaces/records/featuremap.py: field_blocks``, a
categorical field owning one column per level); the numbers are the core's
(``learning/core/fairness/fields.py: field_weights``): a field's **share** of the metric is its share of
Σ's trace, ``tr Σ_ff / tr Σ``; its **weight** is that share beside its share of φ's columns (1:
as Euclidean distance weighs it); a field is **ignored** when that weight is under
``IGNORED_BELOW`` (a tenth). The same figures go to the version page, the compare page and the
metadata JSON (``fields_json``). Word and text spaces have no fields: None.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from learning.core.fairness.fields import IGNORED_BELOW, field_loads, field_weights
from learning.evaluation.spectra import sensitive_basis, spectrum
from learning.models import MetricVersion
from learning.versions.sigmas import sigma_cached
from spaces.models import EmbeddingSpace
from spaces.records.featuremap import field_blocks, field_levels

__all__ = [
    "IGNORED_BELOW",
    "MOVED_AT_LEAST",
    "FieldChange",
    "FieldWeight",
    "VersionFields",
    "fields_differ",
    "fields_json",
    "version_fields",
]

MOVED_AT_LEAST = 0.05  # two versions differ on a field whose share moved 5 points or more
DIRECTION_FIELD_MIN = 0.05  # a direction names the fields holding at least 5 % of it


@dataclass(frozen=True)
class FieldWeight:
    field: str
    share: float  # of Σ's trace
    weight: float  # share / the field's share of columns (1 = Euclidean)
    leading: float  # share of Σ's leading directions
    ignored: bool


@dataclass(frozen=True)
class Direction:
    eigenvalue: (
        float  # the leading ones: λ / tr Σ' (learning/core/fairness/fields.py: field_weights)
    )
    trace_share: float  # λ / tr Σ' (NaN for the sensitive ones)
    fields: tuple[tuple[str, float], ...]  # the fields holding ≥ 5 % of it, largest first


@dataclass(frozen=True)
class VersionFields:
    fields: tuple[FieldWeight, ...]  # in φ's order
    directions: tuple[Direction, ...]  # the leading directions
    sensitive: tuple[Direction, ...]  # the directions it ignores (spectra.sensitive_basis)

    @property
    def ignored(self) -> list[str]:
        return [f.field for f in self.fields if f.ignored]

    @property
    def by_share(self) -> list[FieldWeight]:
        return sorted(self.fields, key=lambda f: -f.share)


def _directions(values, shares, loads, names: list[str]) -> tuple[Direction, ...]:
    directions = []
    for value, share, load in zip(values, shares, loads, strict=True):
        order = np.argsort(-load, kind="stable")
        named = tuple((names[i], float(load[i])) for i in order if load[i] >= DIRECTION_FIELD_MIN)
        directions.append(Direction(float(value), float(share), named))
    return tuple(directions)


def _weights(sigma: np.ndarray, names: list[str], starts, levels) -> VersionFields:
    found = field_weights(sigma, starts, levels)
    rows = tuple(
        FieldWeight(n, float(s), float(w), float(lead), bool(ig))
        for n, s, w, lead, ig in zip(
            names, found.trace, found.relative, found.leading, found.ignored, strict=True
        )
    )
    values, basis = sensitive_basis(spectrum(sigma))
    return VersionFields(
        rows,
        _directions(found.carried, found.carried, found.directions, names),
        _directions(values, np.full(values.size, np.nan), field_loads(basis, starts), names),
    )


@lru_cache(maxsize=128)
def _cached(sigma_name: str, sigma_sha: str, space_id: int, space_sha: str):
    spec = EmbeddingSpace.objects.values_list("feature_map", flat=True).get(pk=space_id)
    names, starts = field_blocks(spec)
    sigma = sigma_cached(sigma_name, sigma_sha)
    if not names or sigma.shape[0] != len(spec.get("feature_names", [])):
        return None
    return _weights(sigma, names, starts, field_levels(spec))


def version_fields(version: MetricVersion) -> VersionFields | None:
    """The fields' weights in a ready version of a record study; None otherwise."""
    space = version.study.space
    ready = version.status == MetricVersion.Status.READY and bool(version.sigma)
    if not ready or not space.feature_map:
        return None
    return _cached(version.sigma.name, version.sigma_sha256, space.pk, space.sha256)


@dataclass(frozen=True)
class FieldChange:
    field: str
    share_a: float
    share_b: float
    ignored_a: bool
    ignored_b: bool

    @property
    def moved(self) -> float:
        return self.share_b - self.share_a


def fields_differ(a: VersionFields, b: VersionFields) -> list[FieldChange]:
    """The fields whose share moved by ``MOVED_AT_LEAST`` or more, or that one version ignores
    and the other does not; the largest move first."""
    before = {f.field: f for f in a.fields}
    changes = [
        FieldChange(f.field, before[f.field].share, f.share, before[f.field].ignored, f.ignored)
        for f in b.fields
        if f.field in before
    ]
    return sorted(
        (
            c
            for c in changes
            if abs(c.moved) >= MOVED_AT_LEAST - 1e-12 or c.ignored_a != c.ignored_b
        ),
        key=lambda c: -abs(c.moved),
    )


def fields_json(found: VersionFields | None) -> list[dict] | None:
    """``[{"field", "share", "weight", "leading", "ignored"}]`` (the metadata JSON's ``fields``)."""
    if found is None:
        return None
    return [
        {
            "field": f.field,
            "share": round(f.share, 6),
            "weight": round(f.weight, 6),
            "leading": round(f.leading, 6),
            "ignored": f.ignored,
        }
        for f in found.fields
    ]
