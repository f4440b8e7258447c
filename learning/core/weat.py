"""WEAT (Caliskan, Bryson & Narayanan 2017) in a Mahalanobis metric, as in the seed paper.

Inner product ``⟨x, y⟩_Σ = xᵀΣy`` and norm ``‖x‖_Σ = √(xᵀΣx)``, computed by transforming every
vector once by ``Σ^{1/2}`` and taking ordinary cosines (``sigma=None`` is the Euclidean metric).
A word whose Σ-norm is zero (it lies entirely in the ignored subspace; numerically: norm
≤ 1e-12 × the largest norm in the test) has cosine 0 with every word.

For a target word ``w``: ``s(w) = mean_{a∈A} cos(w, a) - mean_{b∈B} cos(w, b)``.
``statistic = mean_{x∈X} s(x) - mean_{y∈Y} s(y)`` (signed); the paper's test statistic is
``test_statistic = |statistic|``. ``effect_size = statistic / sd(s(w), w ∈ X ∪ Y)`` with the
*sample* standard deviation (ddof=1); 0 when that SD is 0.

p-value (two-sided): the share of re-partitions of ``X ∪ Y`` into sets of sizes ``|X|`` and
``|Y|`` whose ``|statistic|`` is ≥ ``|observed statistic|`` (up to an absolute tolerance of
``1e-10 · max|s|`` for float ties). When ``C(|X|+|Y|, |X|) ≤ n_permutations`` all partitions are
enumerated (``exact=True``, ``n_partitions = C(|X|+|Y|, |X|)``, the observed one included);
otherwise ``n_permutations`` partitions are sampled independently, each a uniformly random
``|X|``-subset drawn without replacement (the ``|X|`` smallest of ``|X|+|Y|`` iid uniform
keys), and the p-value is ``(b + 1) / (m + 1)`` with ``b`` of the ``m = n_permutations`` sampled
partitions at least as extreme (``exact=False``, ``n_partitions = n_permutations``): the +1
counts the observed partition (valid, never exactly 0). All vectorised: ``s`` once, partition
sums as 0/1-mask products in chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, combinations
from math import comb
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import t as student_t

from .psd import sqrtm_psd, validate_sigma

__all__ = [
    "BootstrapResult",
    "WeatOutcome",
    "WeatRow",
    "WeatSpec",
    "bootstrap_effect_size_ci",
    "effect_size_ci",
    "weat",
    "weat_suite",
]

_CHUNK = 8192


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class WeatOutcome:
    """Outcome of one WEAT (immutable; the score arrays are read-only)."""

    effect_size: float
    p_value: float
    statistic: float
    test_statistic: float
    n_partitions: int
    exact: bool
    s_x: np.ndarray
    s_y: np.ndarray


@dataclass(frozen=True)
class BootstrapResult:
    """An interval for the effect size (targets resampled within X and Y)."""

    estimate: float
    low: float
    high: float
    level: float
    n_boot: int


class WeatSpec(NamedTuple):
    name: str
    X: Any
    Y: Any
    A: Any
    B: Any


@dataclass(frozen=True)
class WeatRow:
    test: str
    metric: str
    result: WeatOutcome
    missing: tuple[str, ...] = ()


def _matrix(v: ArrayLike, name: str, d: int | None = None) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array of word vectors, got {a.shape}")
    if d is not None and a.shape[1] != d:
        raise ValueError(f"{name} has dimension {a.shape[1]}, expected {d}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def _unit_rows(v: np.ndarray, scale: float) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1)
    zero = norms <= 1e-12 * scale
    return np.where(zero[:, None], 0.0, v / np.where(zero, 1.0, norms)[:, None])


def association_scores(
    X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, root: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``s(w)`` for every ``w`` in X and in Y (vectors already validated; ``root = Σ^{1/2}``)."""
    mats = [m if root is None else m @ root for m in (X, Y, A, B)]
    scale = max(float(np.linalg.norm(m, axis=1).max()) for m in mats)
    scale = scale if scale > 0 else 1.0
    ux, uy, ua, ub = (_unit_rows(m, scale) for m in mats)
    direction = ua.mean(axis=0) - ub.mean(axis=0)
    return ux @ direction, uy @ direction


def _partition_sums(
    w: np.ndarray, nx: int, n_permutations: int, rng: np.random.Generator
) -> tuple[np.ndarray, bool]:
    """Sums of ``w`` over X-sides of all (exact) or of sampled partitions."""
    n = w.size
    total = comb(n, nx)
    if total <= n_permutations:
        flat = np.fromiter(
            chain.from_iterable(combinations(range(n), nx)), dtype=np.int64, count=total * nx
        )
        return w[flat.reshape(total, nx)].sum(axis=1), True
    out = np.empty(n_permutations)
    for start in range(0, n_permutations, _CHUNK):
        m = min(_CHUNK, n_permutations - start)
        keys = rng.random((m, n))
        kth = np.partition(keys, nx - 1, axis=1)[:, nx - 1 : nx]
        out[start : start + m] = (keys <= kth).astype(np.float64) @ w
    return out, False


def _weat_from_scores(
    s_x: np.ndarray, s_y: np.ndarray, n_permutations: int, rng: np.random.Generator
) -> WeatOutcome:
    nx, ny = s_x.size, s_y.size
    w = np.concatenate([s_x, s_y])
    stat = float(s_x.mean() - s_y.mean())
    sd = float(np.std(w, ddof=1))
    effect = stat / sd if sd > 0 else 0.0
    sums, exact = _partition_sums(w, nx, n_permutations, rng)
    perm = sums / nx - (w.sum() - sums) / ny
    tol = 1e-10 * max(float(np.abs(w).max()), np.finfo(float).tiny)
    hits = int(np.count_nonzero(np.abs(perm) >= abs(stat) - tol))
    # Exact enumeration includes the observed partition, so hits ≥ 1 already; a sample of
    # partitions does not, hence the +1 correction (b + 1) / (m + 1) that keeps it valid (> 0).
    p = hits / sums.size if exact else (hits + 1) / (sums.size + 1)
    return WeatOutcome(
        effect_size=effect,
        p_value=p,
        statistic=stat,
        test_statistic=abs(stat),
        n_partitions=int(sums.size),
        exact=exact,
        s_x=_readonly(s_x),
        s_y=_readonly(s_y),
    )


def _check_common(n_permutations: int, sizes: tuple[int, int]) -> None:
    if not (isinstance(n_permutations, (int, np.integer)) and n_permutations >= 1):
        raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}")
    if sum(sizes) < 3:
        raise ValueError("X ∪ Y needs at least 3 words (2 for the SD, and a partition to compare)")


def _root(sigma: ArrayLike | None, d: int) -> np.ndarray | None:
    return None if sigma is None else sqrtm_psd(validate_sigma(sigma, d))


def weat(
    X: ArrayLike,
    Y: ArrayLike,
    A: ArrayLike,
    B: ArrayLike,
    sigma: ArrayLike | None = None,
    n_permutations: int = 50_000,
    random_state: int | np.random.Generator | None = 0,
) -> WeatOutcome:
    """Word Embedding Association Test of targets X, Y against attributes A, B in metric Σ.

    See the module docstring for the definitions (effect size uses the sample SD, ddof=1;
    two-sided permutation p-value; exact enumeration when ``C(|X|+|Y|, |X|) ≤ n_permutations``).
    """
    x = _matrix(X, "X")
    d = x.shape[1]
    y, a, b = _matrix(Y, "Y", d), _matrix(A, "A", d), _matrix(B, "B", d)
    _check_common(n_permutations, (x.shape[0], y.shape[0]))
    s_x, s_y = association_scores(x, y, a, b, _root(sigma, d))
    return _weat_from_scores(s_x, s_y, int(n_permutations), np.random.default_rng(random_state))


def bootstrap_effect_size_ci(
    X: ArrayLike,
    Y: ArrayLike,
    A: ArrayLike,
    B: ArrayLike,
    sigma: ArrayLike | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> BootstrapResult:
    """Percentile bootstrap CI of the effect size (the former one, kept for comparison): X and
    Y words resampled with replacement within their sets, attribute sets fixed."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 1):
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    x = _matrix(X, "X")
    d = x.shape[1]
    y, a, b = _matrix(Y, "Y", d), _matrix(A, "A", d), _matrix(B, "B", d)
    _check_common(1, (x.shape[0], y.shape[0]))
    s_x, s_y = association_scores(x, y, a, b, _root(sigma, d))
    rng = np.random.default_rng(random_state)
    bx, by = (s[rng.integers(0, s.size, size=(n_boot, s.size))] for s in (s_x, s_y))
    sd = np.std(np.concatenate([bx, by], axis=1), axis=1, ddof=1)
    diff = bx.mean(axis=1) - by.mean(axis=1)
    eff = np.divide(diff, sd, out=np.zeros_like(diff), where=sd > 0)
    w = np.concatenate([s_x, s_y])
    sd0 = float(np.std(w, ddof=1))
    est = float((s_x.mean() - s_y.mean()) / sd0) if sd0 > 0 else 0.0
    lo, hi = np.quantile(eff, [(1 - level) / 2, (1 + level) / 2])
    return BootstrapResult(
        estimate=est, low=float(lo), high=float(hi), level=float(level), n_boot=int(n_boot)
    )


def _effect_sizes(s_x: np.ndarray, s_y: np.ndarray) -> np.ndarray:
    """Effect sizes of score sets along the last axis (leading axes: resamples)."""
    diff = s_x.mean(axis=-1) - s_y.mean(axis=-1)
    sd = np.std(np.concatenate([s_x, s_y], axis=-1), axis=-1, ddof=1)
    return np.divide(diff, sd, out=np.zeros_like(diff), where=sd > 0)


def _within_gap(s_x: np.ndarray, s_y: np.ndarray) -> np.ndarray:
    """δ = (mean X − mean Y) / pooled within-set SD (ddof 2), along the last axis."""
    n = s_x.shape[-1] + s_y.shape[-1]
    ss = sum(((s - s.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1) for s in (s_x, s_y))
    sd = np.sqrt(ss / (n - 2))
    diff = s_x.mean(axis=-1) - s_y.mean(axis=-1)
    return np.divide(diff, sd, out=np.full_like(diff, np.nan), where=sd > 0)


def _jackknife_se(s_x: np.ndarray, s_y: np.ndarray) -> np.ndarray:
    """Jackknife standard error of δ along the last axis: every leave-one-word-out δ from
    running sums (O(n) per resample, no loop over words); NaN where a δ is undefined."""
    nx, ny = s_x.shape[-1], s_y.shape[-1]
    n = nx + ny
    sums = [
        (s.sum(axis=-1, keepdims=True), (s * s).sum(axis=-1, keepdims=True)) for s in (s_x, s_y)
    ]
    ss = [q - t * t / m for (t, q), m in zip(sums, (nx, ny), strict=True)]
    loo = []
    for i, (s, m) in enumerate(((s_x, nx), (s_y, ny))):
        t, q = sums[i][0] - s, sums[i][1] - s * s  # without each word of this set
        means = [t / (m - 1), sums[1 - i][0] / (n - m)]
        sd = np.sqrt(np.maximum(q - t * t / (m - 1) + ss[1 - i], 0.0) / (n - 3))
        diff = means[0] - means[1] if i == 0 else means[1] - means[0]
        loo.append(np.divide(diff, sd, out=np.full_like(diff, np.nan), where=sd > 0))
    loo = np.concatenate(loo, axis=-1)
    centred = loo - loo.mean(axis=-1, keepdims=True)
    return np.sqrt((n - 1) / n * np.sum(centred * centred, axis=-1))


def effect_size_ci(
    X: ArrayLike,
    Y: ArrayLike,
    A: ArrayLike,
    B: ArrayLike,
    sigma: ArrayLike | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> BootstrapResult:
    """Interval of the population effect size ``(μ_X − μ_Y) / σ`` (σ: SD of the target words,
    X and Y mixed as p = |X| : |Y|) = ``δ / √(1 + p(1−p)δ²)``, δ the gap in within-set SDs.

    Studentized bootstrap (bootstrap-t) on δ, then mapped: words resampled within X and Y
    (attribute sets fixed), each resample's δ studentized by its jackknife error, each side's
    quantile no nearer the centre than Student's t with |X|+|Y|−2 degrees of freedom. Not on the
    effect size itself: it is bounded (|d| < 1/√(p(1−p))) and at large effects far from pivotal;
    8 words per set give a bootstrap distribution with short tails, which the t floor (the exact
    pivot for normal scores at δ = 0) corrects. ``estimate``: the sample effect size (``weat``);
    resamples without spread are dropped. Coverage: ``benchmarks/coverage.py`` (docs/core.md)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 1):
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    x = _matrix(X, "X")
    d = x.shape[1]
    y, a, b = _matrix(Y, "Y", d), _matrix(A, "A", d), _matrix(B, "B", d)
    _check_common(1, (x.shape[0], y.shape[0]))
    s_x, s_y = association_scores(x, y, a, b, _root(sigma, d))
    est = float(_effect_sizes(s_x, s_y))
    gap, se = float(_within_gap(s_x, s_y)), float(_jackknife_se(s_x, s_y))
    if not se > 0:  # no spread within the sets: nothing to infer
        return BootstrapResult(est, est, est, float(level), int(n_boot))
    rng = np.random.default_rng(random_state)
    bx, by = (s[rng.integers(0, s.size, size=(n_boot, s.size))] for s in (s_x, s_y))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (_within_gap(bx, by) - gap) / _jackknife_se(bx, by)
    t = t[np.isfinite(t)]
    floor = float(student_t.ppf((1 + level) / 2, s_x.size + s_y.size - 2))
    q_lo, q_hi = np.quantile(t, [(1 - level) / 2, (1 + level) / 2]) if t.size else (0.0, 0.0)
    p = s_x.size / (s_x.size + s_y.size)
    low, high = (
        v / np.sqrt(1 + p * (1 - p) * v * v)
        for v in (gap - max(q_hi, floor) * se, gap - min(q_lo, -floor) * se)
    )
    return BootstrapResult(est, float(low), float(high), float(level), int(n_boot))


def _lookup(
    words: Any, embeddings: Callable[[str], Any] | Mapping[str, Any] | None, missing: list[str]
) -> np.ndarray:
    if isinstance(words, np.ndarray) and words.ndim == 2:
        return words
    if embeddings is None:
        raise ValueError("word lists need `embeddings` (a mapping or a callable word → vector)")
    get = embeddings.get if isinstance(embeddings, Mapping) else embeddings
    vecs = []
    for word in words:  # looking words up is inherently per word (a dict/callable per word)
        v = get(word)
        if v is None:
            missing.append(str(word))
        else:
            vecs.append(np.asarray(v, dtype=np.float64))
    return np.array(vecs)


def weat_suite(
    tests: Sequence[WeatSpec | tuple] | Mapping[str, tuple],
    metrics: Mapping[str, ArrayLike | None],
    *,
    embeddings: Callable[[str], Any] | Mapping[str, Any] | None = None,
    n_permutations: int = 50_000,
    random_state: int | np.random.Generator | None = 0,
) -> list[WeatRow]:
    """Run every test in every metric; rows ordered by test, then metric.

    ``tests``: ``WeatSpec(name, X, Y, A, B)`` tuples (or a mapping name → (X, Y, A, B)) whose
    sets are (n, d) arrays, or word lists resolved through ``embeddings`` (words it lacks are
    dropped and reported in ``WeatRow.missing``). ``metrics``: name → Σ (or None: Euclidean).
    ``Σ^{1/2}`` is computed once per metric. Each test uses its own random stream spawned from
    ``random_state``, so a test's p-value does not depend on the other tests.
    """
    items: Iterable = (
        tests.items() if isinstance(tests, Mapping) else ((t[0], tuple(t[1:])) for t in tests)
    )
    prepared = []
    for name, sets in items:
        missing: list[str] = []
        mats = [_lookup(s, embeddings, missing) for s in sets]
        if len(mats) != 4:
            raise ValueError(f"test {name!r} must have four sets X, Y, A, B")
        x = _matrix(mats[0], f"{name}: X")
        d = x.shape[1]
        rest = [_matrix(m, f"{name}: {k}", d) for m, k in zip(mats[1:], "YAB", strict=True)]
        _check_common(n_permutations, (x.shape[0], rest[0].shape[0]))
        prepared.append((str(name), [x, *rest], tuple(missing)))
    if not prepared:
        return []
    d = prepared[0][1][0].shape[1]
    if any(p[1][0].shape[1] != d for p in prepared):
        raise ValueError("all tests must use vectors of the same dimension")
    roots = {m: _root(s, d) for m, s in metrics.items()}
    seeds = (
        np.random.SeedSequence(
            random_state if isinstance(random_state, (int, np.integer)) else None
        ).spawn(len(prepared))
        if not isinstance(random_state, np.random.Generator)
        else None
    )
    rows = []
    for i, (name, (x, y, a, b), missing) in enumerate(prepared):
        for metric, root in roots.items():
            rng = np.random.default_rng(seeds[i]) if seeds is not None else random_state
            s_x, s_y = association_scores(x, y, a, b, root)
            res = _weat_from_scores(s_x, s_y, int(n_permutations), rng)
            rows.append(WeatRow(test=name, metric=metric, result=res, missing=missing))
    return rows
