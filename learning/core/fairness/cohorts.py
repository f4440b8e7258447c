"""Whose metric? The numbers that compare the metrics of groups of annotators (cohorts), numpy
only: whether the cohorts' answers differ beyond noise (a permutation test of the cohort labels
over *annotators*), the fields that carry their difference, the pairs they most disagree on.

The test (:func:`cohort_permutation_test`) is a score test at the pooled metric Σ₀ (fitted on
every answer). Each answer's gradient of EXPLORE's log-likelihood with respect to Σ at Σ₀ is
``g = ∂ℓ/∂d · z zᵀ`` (``d = zᵀΣ₀z``); an annotator's score ``S_i`` is the sum over their
answers. When every cohort follows the same rule, the annotators are exchangeable: Σ₀ treats
them alike, and which cohort an annotator belongs to is unrelated to their scores. The
statistic is the between-cohort sum of squares of the scores,
``T = Σ_c ‖Σ_{i∈c} S_i − (n_c/n) Σ_i S_i‖²_F / n_c`` (``n_c``: the cohort's answers), large
when one cohort's answers pull Σ₀ one way and another's the other way; its p-value compares T
with its value under ``B`` random reassignments of the cohort labels to the annotators (each
cohort keeping its number of annotators): ``p = (1 + #{T_b ≥ T}) / (1 + B)``. Answers are never
shuffled one by one: an annotator's answers share their rule, and a test over answers would
call two cohorts of one idiosyncratic annotator each "different" far beyond its level. With
few annotators the smallest p-value is large (two annotators a cohort: 1/6 at best); the caller
says so. No refit per permutation: one pass over the answers, then B products of a (cohorts ×
annotators) matrix with the annotators' scores.

The fields (:func:`difference_fields`): the leading directions of a difference by |eigenvalue|,
i.e. of the PSD matrix ``|Δ|`` (same eigenvectors, absolute eigenvalues), as each field's share
(``learning/core/fairness/fields.py: field_weights``'s ``leading``). Two differences: the fitted
``Σ_A − Σ_B``, and ``S̄_A − S̄_B`` (:func:`score_difference`), the cohorts' mean scores at the
pooled Σ — where one Fisher-scoring step from the pooled Σ towards each cohort's fit goes, an
unshrunk estimate of the direction of ``Σ_A − Σ_B``. The fitted Σ's are penalised toward a
scaled identity by amounts each cohort's penalty choice sets, and the difference of those
shrinkages can lead the fitted difference (``benchmarks/cohorts.py``); the scores have no
penalty, so the fields are named by them and the fitted difference is shown beside.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from .._pairloss import log_two_sigmoid_neg, pair_slope, quad_forms
from ..psd import eigh_descending, symmetrize
from .fields import field_weights

PERMUTATIONS = 999


def annotator_scores(
    z: np.ndarray, y: np.ndarray, sigma: np.ndarray, annotator: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each annotator's summed score at ``sigma`` (module docstring) as the upper triangle of
    ``S_i`` (off-diagonal entries counted twice: Frobenius norms are kept), their codes and
    their answers' count: (scores (m, d(d+1)/2), annotators (m,), answers (m,))."""
    z = np.asarray(z, dtype=np.float64)
    d = np.maximum(quad_forms(z, np.asarray(sigma, dtype=np.float64)), 0.0)
    slope = pair_slope(d, np.asarray(y, dtype=np.float64))
    who, inverse = np.unique(np.asarray(annotator), return_inverse=True)
    iu = np.triu_indices(z.shape[1])
    factor = np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
    scores = np.zeros((who.size, iu[0].size))
    for k in range(who.size):
        mine = inverse == k
        zk = z[mine]
        s = (zk * slope[mine, None]).T @ zk
        scores[k] = s[iu] * factor
    return scores, who, np.bincount(inverse, minlength=who.size).astype(np.float64)


def _statistic(onehot: np.ndarray, scores: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """T (module docstring) for each labelling: ``onehot`` (B, cohorts, annotators)."""
    total, n = scores.sum(axis=0), answers.sum()
    sums = onehot @ scores  # (B, cohorts, F)
    counts = onehot @ answers  # (B, cohorts)
    centred = sums - (counts / n)[..., None] * total
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(counts > 0, np.sum(centred**2, axis=-1) / counts, 0.0)
    return per.sum(axis=-1)


@dataclass(frozen=True)
class PermutationTest:
    statistic: float
    p_value: float
    permutations: int
    annotators: int
    smallest_p: float  # the smallest p-value these annotators allow (1 / distinct labellings)


def cohort_permutation_test(
    scores: np.ndarray,
    answers: np.ndarray,
    cohort: np.ndarray,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> PermutationTest:
    """The permutation test of the module docstring: ``scores`` and ``answers`` per annotator
    (``annotator_scores``), ``cohort`` their cohort codes (0..K-1)."""
    cohort = np.asarray(cohort, dtype=np.int64)
    k, m = int(cohort.max(initial=-1)) + 1, cohort.size
    if k < 2 or m < 2:
        raise ValueError("the test needs two cohorts")
    rng = np.random.default_rng(seed)
    observed = _statistic(np.eye(k)[cohort].T[None], scores, answers)[0]
    exceed, done = 0, 0
    chunk = 128
    while done < permutations:
        b = min(chunk, permutations - done)
        labels = np.stack([rng.permutation(cohort) for _ in range(b)])
        onehot = np.transpose(np.eye(k)[labels], (0, 2, 1))
        exceed += int(np.sum(_statistic(onehot, scores, answers) >= observed * (1 - 1e-12)))
        done += b
    sizes = np.bincount(cohort, minlength=k)
    distinct = _multinomial(m, sizes)
    return PermutationTest(
        float(observed), (1 + exceed) / (1 + permutations), permutations, m, 1.0 / distinct
    )


def _multinomial(m: int, sizes: np.ndarray) -> float:
    total, left = 1, m
    for s in sizes:
        total *= comb(left, int(s))
        left -= int(s)
    return float(total)


def score_matrix(flat: np.ndarray, d: int) -> np.ndarray:
    """A d × d symmetric matrix from ``annotator_scores``' upper-triangle layout."""
    iu = np.triu_indices(d)
    upper = np.zeros((d, d))
    upper[iu] = flat / np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
    return upper + upper.T - np.diag(np.diag(upper))


def score_difference(
    scores: np.ndarray, answers: np.ndarray, cohort: np.ndarray, a: int, b: int, d: int
) -> np.ndarray:
    """``S̄_A − S̄_B``: cohort ``a``'s mean score per answer less cohort ``b``'s (d × d): where
    each cohort's answers pull the pooled Σ, one step from it (module docstring)."""
    cohort = np.asarray(cohort)
    mean = [scores[cohort == c].sum(axis=0) / max(answers[cohort == c].sum(), 1) for c in (a, b)]
    return score_matrix(mean[0] - mean[1], d)


def difference_fields(delta: np.ndarray, starts, categorical=None) -> np.ndarray:
    """Each field's share of the leading directions of a symmetric difference ``delta``
    (``Σ_A − Σ_B``, or ``score_difference``): those of the PSD ``|delta|`` (same eigenvectors,
    absolute eigenvalues; ``field_weights``' ``leading``); sums to 1 (NaN: ``delta`` is 0)."""
    values, vectors = eigh_descending(symmetrize(np.asarray(delta, float)))
    absolute = (vectors * np.abs(values)) @ vectors.T
    return field_weights(absolute, starts, categorical).leading


def comparable_probability(z: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """EXPLORE's P(comparable) of each pair difference under ``sigma``: ``2σ(−d)``."""
    d = np.maximum(quad_forms(np.asarray(z, float), np.asarray(sigma, float)), 0.0)
    return np.exp(log_two_sigmoid_neg(d, slope=False)[0])


def disagreement_order(z: np.ndarray, sigmas: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (rows of ``z``) ordered by how far apart the cohorts' metrics put their
    P(comparable) (largest spread first), and that spread."""
    p = np.stack([comparable_probability(z, s) for s in sigmas])
    spread = p.max(axis=0) - p.min(axis=0)
    return np.argsort(-spread, kind="stable"), spread
