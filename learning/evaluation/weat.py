"""WEAT evaluation of metrics: a learned version's Sigma, or the Euclidean baseline of a space.

* :func:`weat_evaluate_version` runs every test of every WEAT suite attached to the version's
  study under the version's Sigma and stores one :class:`~learning.models.WeatResult` per test
  (replacing an earlier result of the same test and version).
* :func:`weat_baseline` does the same under the Euclidean metric (``metric_version`` NULL). The
  baseline depends only on the space and the words, so it is computed once and cached in the
  database; it is recomputed when asked (``refresh``) or when the stored rows used another
  number of permutations.

Words are looked up by key in the study's space: the exact key first, else the lowercased one
(GloVe keys are lowercase, WEAT lists capitalise names). Words missing from the space are
dropped from their set and listed in ``missing_words``; a test left with fewer than two target
words in a set or no attribute word is skipped (logged), as no test statistic exists then.

The statistics come from :func:`learning.core.weat.weat` (two-sided permutation p-value, exact
over all equal-size re-partitions when there are at most ``n_permutations`` of them, else
sampled with a fixed ``random_state``); ``scores`` keeps s(w) of every target word.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import transaction

from learning.core.weat import effect_size_ci, weat
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from learning.versions.sigmas import sigma_of
from spaces.models import EmbeddingSpace, Item

logger = logging.getLogger(__name__)

N_PERMUTATIONS = 50_000
RANDOM_STATE = 0
N_BOOT = 2000  # resamples of the effect size's 95% interval (studentized bootstrap); 0: none
EUCLIDEAN = "euclidean"
SETS = ("x_words", "y_words", "a_words", "b_words")
# The fewest words of each set found in the space for a test statistic to exist.
MIN_WORDS = {"x_words": 2, "y_words": 2, "a_words": 1, "b_words": 1}


@dataclass(frozen=True)
class ResolvedTest:
    """A test's four word sets as row indices of the space, and the words not found."""

    test: WeatTest
    words: dict[str, list[str]]  # set -> the words found (as written in the test)
    rows: dict[str, np.ndarray]  # set -> their rows in the space's matrix
    missing: list[str]

    @property
    def runnable(self) -> bool:
        return all(len(self.rows[name]) >= least for name, least in MIN_WORDS.items())


def word_rows(words: Iterable[str], space: EmbeddingSpace) -> dict[str, int]:
    """{word: its row in ``space``} for the words found: the exact key, else the lowercased one
    (one query per 900 words); words not found are absent."""
    wanted = set(words)
    keys = sorted(wanted | {w.lower() for w in wanted})
    row_of: dict[str, int] = {}
    for start in range(0, len(keys), 900):
        chunk = keys[start : start + 900]
        row_of.update(Item.objects.filter(space=space, key__in=chunk).values_list("key", "row"))
    found = {w: row_of.get(w, row_of.get(w.lower())) for w in wanted}
    return {w: row for w, row in found.items() if row is not None}


def resolve_tests(tests: Sequence[WeatTest], space: EmbeddingSpace) -> list[ResolvedTest]:
    """Look every word of ``tests`` up in ``space`` (one query for all of them)."""
    row_of = word_rows((w for t in tests for s in SETS for w in getattr(t, s)), space)
    resolved = []
    for test in tests:
        words, rows, missing = {}, {}, []
        for name in SETS:
            found = []
            for word in getattr(test, name):
                row = row_of.get(word)
                if row is None:
                    missing.append(word)
                else:
                    found.append((word, row))
            words[name] = [w for w, _ in found]
            rows[name] = np.array([r for _, r in found], dtype=np.int64)
        resolved.append(ResolvedTest(test, words, rows, missing))
    return resolved


def _run(
    resolved: ResolvedTest,
    vectors: dict[int, np.ndarray],
    sigma: np.ndarray | None,
    n_permutations: int,
    random_state: int,
    n_boot: int,
):
    """The core's WEAT and (when ``n_boot``) the 95 % interval of the effect size (studentized
    bootstrap, ``learning.core.weat.effect_size_ci``)."""
    x, y, a, b = (np.stack([vectors[r] for r in resolved.rows[s]]) for s in SETS)
    result = weat(x, y, a, b, sigma=sigma, n_permutations=n_permutations, random_state=random_state)
    interval = None
    if n_boot:
        interval = effect_size_ci(x, y, a, b, sigma=sigma, n_boot=n_boot, random_state=random_state)
    return result, interval


def _scores(resolved: ResolvedTest, result) -> dict[str, float]:
    """s(w) of every target word, keyed by the word as written in the test."""
    words = resolved.words["x_words"] + resolved.words["y_words"]
    values = np.concatenate([result.s_x, result.s_y])
    return {w: round(float(v), 6) for w, v in zip(words, values, strict=True)}


def weat_outcomes(
    tests: Sequence[WeatTest],
    space: EmbeddingSpace,
    sigma: np.ndarray | None,
    *,
    n_permutations: int = N_PERMUTATIONS,
    random_state: int = RANDOM_STATE,
    n_boot: int = N_BOOT,
    factor: np.ndarray | None = None,
) -> list[tuple[ResolvedTest, object | None, object | None]]:
    """(resolved test, WEAT outcome, effect-size interval) for each of ``tests``, stored nowhere;
    the outcome is None for a test left with too few words. One indexed read of the matrix.

    ``factor``: instead of ``sigma``, a ``W`` with ``Σ = W Wᵀ`` (a cached one, as
    ``learning.versions.sigmas.fitted_metric`` keeps): the vectors are mapped by ``W`` and
    compared in the Euclidean metric, the same inner products ``xᵀΣy`` without Σ's square root.
    """
    resolved = resolve_tests(tests, space)
    rows = np.unique(np.concatenate([r.rows[s] for r in resolved for s in SETS] + [[]]))
    rows = rows.astype(np.int64)
    matrix = space.vectors(rows) if rows.size else np.empty((0, space.dimension))
    if factor is not None:
        matrix, sigma = matrix @ factor, None
    vectors = dict(zip(rows.tolist(), matrix, strict=True))
    outcomes = []
    for item in resolved:
        if not item.runnable:
            logger.warning(
                "WEAT %r skipped in space %s: too few words found (missing %s)",
                item.test.name,
                space.name,
                ", ".join(item.missing),
            )
            outcomes.append((item, None, None))
            continue
        outcome, interval = _run(item, vectors, sigma, n_permutations, random_state, n_boot)
        outcomes.append((item, outcome, interval))
    return outcomes


def weat_evaluate(
    *,
    tests: Sequence[WeatTest],
    space: EmbeddingSpace,
    sigma: np.ndarray | None,
    metric: str,
    version: MetricVersion | None = None,
    n_permutations: int = N_PERMUTATIONS,
    random_state: int = RANDOM_STATE,
    n_boot: int = N_BOOT,
) -> list[WeatResult]:
    """Run ``tests`` in ``space`` under ``sigma`` (None: Euclidean) and store the results.

    One indexed read of the matrix for all words; one stored row per runnable test (an earlier
    row of the same test and version, or the same test and space for the baseline, is
    replaced). Returns the stored rows in the order of ``tests``.
    """
    outcomes = weat_outcomes(
        tests,
        space,
        sigma,
        n_permutations=n_permutations,
        random_state=random_state,
        n_boot=n_boot,
    )
    results = []
    for item, outcome, interval in outcomes:
        if outcome is None:
            continue
        results.append(
            WeatResult(
                test=item.test,
                space=space,
                metric_version=version,
                metric=metric,
                p_value=float(outcome.p_value),
                effect_size=float(outcome.effect_size),
                statistic=float(outcome.statistic),
                n_partitions=int(outcome.n_partitions),
                exact=bool(outcome.exact),
                scores=_scores(item, outcome),
                missing_words=item.missing,
                ci_low=None if interval is None else float(interval.low),
                ci_high=None if interval is None else float(interval.high),
            )
        )
    with transaction.atomic():
        stale = WeatResult.objects.filter(test__in=list(tests))
        if version is None:
            stale = stale.filter(space=space, metric_version__isnull=True)
        else:
            stale = stale.filter(metric_version=version)
        stale.delete()
        WeatResult.objects.bulk_create(results)
    return results


def _suites_tests(suites: Iterable[WeatSuite]) -> list[WeatTest]:
    return list(WeatTest.objects.filter(suite__in=list(suites)).order_by("suite_id", "position"))


def weat_evaluate_version(
    version: MetricVersion,
    *,
    n_permutations: int = N_PERMUTATIONS,
    random_state: int = RANDOM_STATE,
    n_boot: int = N_BOOT,
) -> list[WeatResult]:
    """Every WEAT suite of the version's study under its Sigma; the stored results.

    ``metric`` is the version's label (``face-3``, ``explore``), else its method.
    """
    study = version.study
    tests = _suites_tests(study.weat_suites.all())
    if not tests:
        return []
    return weat_evaluate(
        tests=tests,
        space=study.space,
        sigma=sigma_of(version),
        metric=version.label or version.method,
        version=version,
        n_permutations=n_permutations,
        random_state=random_state,
        n_boot=n_boot,
    )


def weat_baseline(
    suite: WeatSuite,
    space: EmbeddingSpace,
    *,
    n_permutations: int = N_PERMUTATIONS,
    random_state: int = RANDOM_STATE,
    n_boot: int = N_BOOT,
    refresh: bool = False,
) -> list[WeatResult]:
    """The suite's Euclidean results in ``space``, computed once and cached in the database.

    Stored rows are reused when every test has one and each is exact or used
    ``n_permutations``; otherwise (or with ``refresh``) the baseline is recomputed. Pass
    ``refresh=True`` after editing a test's words (the cache does not see edits).
    """
    tests = list(suite.tests.order_by("position"))
    cached = list(
        WeatResult.objects.filter(test__in=tests, space=space, metric_version__isnull=True)
        .select_related("test")
        .order_by("test__position")
    )
    fresh = len(cached) == len(tests) and all(
        r.exact or r.n_partitions == n_permutations for r in cached
    )
    if fresh and not refresh:
        return cached
    return weat_evaluate(
        tests=tests,
        space=space,
        sigma=None,
        metric=EUCLIDEAN,
        n_permutations=n_permutations,
        random_state=random_state,
        n_boot=n_boot,
    )
