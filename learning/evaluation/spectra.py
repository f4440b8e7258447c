"""What a Sigma ignores, in numbers: its spectrum and sensitive subspace.

Plain numpy/scipy on arrays (the pages pass in Sigmas and the memory-mapped embedding matrix).

The *sensitive subspace* of a metric is spanned by Sigma's eigenvectors with small eigenvalues:
moving an item along them barely changes its fair distance, so the metric treats items that
differ only there as comparable. How many directions count as "small" is the numerical core's
rule (:func:`learning.core.drift.sensitive_subspace`, the same one the refits use for drift):
for FACE's projector I - QQᵀ the k eigenvalues below ½; otherwise the largest relative gap of
the ascending spectrum. Drift between two versions: :mod:`learning.versions.drift`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from common.matrices import matrix_load
from learning.core.drift import sensitive_subspace
from learning.core.psd import eigh_descending, symmetrize
from learning.models import MetricVersion
from learning.versions.sigmas import sigma_cached
from spaces.models import Item

MAX_SENSITIVE = 10  # directions listed on a page
ALIGNED_ROWS = 50_000  # rows of the embedding matrix searched (GloVe: the most frequent words)
ALIGNED_TOP = 10


@dataclass(frozen=True)
class Spectrum:
    values: np.ndarray  # eigenvalues, descending
    vectors: np.ndarray  # matching eigenvectors as columns
    sigma: np.ndarray  # the (symmetrised) matrix


def spectrum(sigma: np.ndarray) -> Spectrum:
    values, vectors = eigh_descending(sigma)
    return Spectrum(values=values, vectors=vectors, sigma=symmetrize(sigma))


def sensitive_basis(
    spec: Spectrum, *, limit: int | None = MAX_SENSITIVE
) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending, orthonormal columns) of the sensitive subspace.

    ``limit`` caps the number of directions (for display); ``None`` keeps the whole subspace
    (for comparing subspaces: with a tied eigenvalue, a cap would pick an arbitrary part).
    """
    ascending = spec.values[::-1]
    try:
        count = sensitive_subspace(spec.sigma).shape[1]
    except ValueError:  # not a valid Sigma (not symmetric PSD): nothing to show
        count = 0
    count = min(count, ascending.size if limit is None else limit)
    return ascending[:count], spec.vectors[:, ::-1][:, :count]


def aligned_rows(
    matrix: np.ndarray, basis: np.ndarray, *, rows: int = ALIGNED_ROWS, top: int = ALIGNED_TOP
) -> list[list[tuple[int, float]]]:
    """For each column of ``basis``: the ``top`` matrix rows with the largest |cos| to it.

    One matrix product over the first ``rows`` rows (a memory-mapped matrix reads only those).
    Returns, per direction, ``(row index, cosine)`` pairs, best first.
    """
    block = np.asarray(matrix[:rows], dtype=np.float64)
    if block.size == 0:
        return [[] for _ in range(basis.shape[1])]
    norms = np.linalg.norm(block, axis=1)
    norms[norms == 0] = 1.0
    cosines = (block @ basis) / norms[:, None]  # basis columns have unit norm
    k = min(top, block.shape[0])
    best = np.argpartition(-np.abs(cosines), k - 1, axis=0)[:k]  # (k, directions)
    result = []
    for j in range(basis.shape[1]):
        candidates = best[:, j]
        order = np.argsort(-np.abs(cosines[candidates, j]), kind="stable")
        result.append([(int(r), float(cosines[r, j])) for r in candidates[order]])
    return result


# --- A version's sensitive directions, with the items most aligned with each -----------------


@dataclass
class Direction:
    eigenvalue: float
    items: list[tuple[str, float]]  # (item key, cosine with the direction)


def _shown(key: str, text: str, limit: int = 60) -> str:
    if not text:
        return key
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut[: limit - 1]).rstrip() + "…"


@lru_cache(maxsize=128)
def _directions_cached(sigma_name, sigma_sha, space_id, matrix_name, space_sha):
    spec = spectrum(sigma_cached(sigma_name, sigma_sha))
    values, basis = sensitive_basis(spec)
    dimension = sensitive_basis(spec, limit=None)[0].size
    matrix = matrix_load(matrix_name, space_sha)
    if matrix.shape[1] != basis.shape[0]:
        return dimension, ()
    aligned = aligned_rows(matrix, basis)
    rows = {row for direction in aligned for row, _ in direction}
    keys = {  # a text by its first words, a word by its key
        row: _shown(key, text)
        for row, key, text in Item.objects.filter(space_id=space_id, row__in=rows).values_list(
            "row", "key", "text"
        )
    }
    return dimension, tuple(
        Direction(float(value), [(keys.get(row, f"row {row}"), cos) for row, cos in direction])
        for value, direction in zip(values, aligned, strict=True)
    )


def _directions(version: MetricVersion) -> tuple[int, tuple[Direction, ...]]:
    space = version.study.space
    return _directions_cached(
        version.sigma.name, version.sigma_sha256, space.pk, space.matrix.name, space.sha256
    )


def sensitive_directions(version: MetricVersion) -> list[Direction]:
    """The sensitive directions with the items most aligned with each — words by their key,
    texts by their first words (1 query)."""
    return list(_directions(version)[1])


def sensitive_dimension(version: MetricVersion) -> int:
    """The dimension of the whole sensitive subspace (the page shows at most 10 directions)."""
    return _directions(version)[0]
