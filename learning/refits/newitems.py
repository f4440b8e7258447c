"""A version's check on new people: its own recipe refitted on each item fold's training part,
scored on the pairs of that fold's held-out items (``learning/versions/new_items.py``).

The recipe is what made the stored Sigma, all of it: EXPLORE with its own penalty choice, its
prior (FACE on the comparable pairs refitted on the training part alone when it learns from
them), reliability weights when the version is weighted (the verdict is the stored, weighted
fit's); FACE on the groups and the training part's comparable pairs. A fold whose training part
cannot be fitted (one label, too few answers) scores nothing. The fold fits and their held-out
pairs are kept beside the Sigma (``learning/versions/storage.py: fold_fits_save``): a Sigma
derived from this version later (a projection) is judged by the same derivation applied to each
fold fit, on the same held-out items (``storage.metric_version_create``'s ``derive``).

Which answers are scored: under ``random`` every held-out answer; under any other strategy
(``annotation/labelling/strategies.py: control_only``) only those to control pairs, against the
comparable rate of the training part's control answers. Those are uniform draws of pairs
whatever the strategy; its own picks are pairs where the current metric is unsure, and on them a
version gains less than on a fresh pair of new people (``benchmarks/coverage_strategies.py``:
on every held-out answer the interval covered 0.67 under adaptive strategies, missing low, and
none of 200 in its ``rule`` world under ``uncertainty`` and ``targeted``; now 0.95).

Cost: one fit of the recipe per item fold (``N_ITEM_FOLDS``) on about two thirds of the
answers, after the version's own fit.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from annotation.labelling.strategies import hash_control
from learning.core._explore_start import best_scale
from learning.core._pairloss import quad_forms
from learning.evaluation.informative import version_recheck
from learning.models import MetricVersion
from learning.refits import face_fits, fitting
from learning.refits.cache import _rows_differences
from learning.refits.pairs import PairData
from learning.versions import selectors, sigmas, storage
from learning.versions.new_items import Figures, ItemSplit, item_split, new_item_figures

Method = MetricVersion.Method

Recipe = Callable[..., np.ndarray]  # (training part, its mask, fold=k or None) → Sigma
RATE_MIN = 20  # control answers that fix a constant; fewer: all answers (control_only)


@dataclass
class FoldWarms:
    """Each item fold's last EXPLORE solutions (fold → ``cache.WarmStart``), where the next
    refit's fold fits start (``starts``), and the solutions of this refit's (``kept``). An
    item's fold is fixed, so a fold's training part only grows between refits and its last
    solution is a close start; a start is a candidate only (``fitting.fit_explore``'s ``warm``:
    the same stopping rule), as for the version's own fit."""

    starts: dict
    kept: dict = field(default_factory=dict)


def pairs_subset(pairs: PairData, keep: np.ndarray) -> PairData:
    """The observations ``keep`` (a mask) as PairData of their own (pairs re-indexed 0..m-1)."""
    pair = None
    if pairs.pair is not None:
        pair = np.unique(pairs.pair[keep], return_inverse=True)[1].ravel()
    return pairs.take(keep, pair)


@dataclass(frozen=True)
class FoldFits:
    """Each item fold's fit of the recipe (None: not fitted), its training rate, the split, and
    which answers are scored (held out, and to control pairs under ``control_only``)."""

    fits: list
    rates: np.ndarray
    split: ItemSplit
    scored: np.ndarray

    def held(self, pairs: PairData) -> dict:
        """The scored held-out pairs as arrays (what ``storage.fold_fits_save`` keeps)."""
        mine = self.scored
        return {
            "row_a": pairs.row_a[mine],
            "row_b": pairs.row_b[mine],
            "y": pairs.y[mine],
            "fold": self.split.held[mine],
            "rates": self.rates,
        }


def scoring(pairs: PairData, control_only: bool = False):
    """The item split, which answers are scored (held out; to control pairs only under
    ``control_only``: module docstring) and each fold's constant: the comparable rate of its
    training part's answers (of their control ones under ``control_only`` when there are
    ``RATE_MIN``; 0.5 for an empty part)."""
    split = item_split(pairs.row_a, pairs.row_b)
    uniform = hash_control(pairs.hash) if control_only else np.ones(len(pairs), dtype=bool)
    rates = np.full(split.k, 0.5)
    for k in range(split.k):
        keep = split.train(k)
        if keep.any():
            rates[k] = constant_rate(pairs.y, keep, uniform)
    return split, (split.held >= 0) & uniform, rates


def constant_rate(y: np.ndarray, keep: np.ndarray, uniform: np.ndarray) -> float:
    """The constant prediction from the answers ``keep`` (not empty): the comparable rate of
    those among them that are ``uniform`` draws when there are ``RATE_MIN``, else of all."""
    base = keep & uniform
    return float(y[base if base.sum() >= RATE_MIN else keep].mean())


def fold_fits(pairs: PairData, recipe: Recipe, control_only: bool = False) -> FoldFits:
    """The recipe on each item fold's training part (module docstring), for the folds with
    answers to score (``scoring``)."""
    split, scored, rates = scoring(pairs, control_only)
    fits = []
    for k in range(split.k):
        keep = split.train(k)
        if not np.any(scored & (split.held == k)) or not keep.any():
            fits.append(None)
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits.append(np.asarray(recipe(pairs_subset(pairs, keep), keep, fold=k)))
        except (fitting.FitError, ValueError, np.linalg.LinAlgError):
            fits.append(None)
    return FoldFits(fits, rates, split, scored)


def score(held: dict, fits: list, read_vectors) -> Figures:
    """The new-items figures of ``fits`` on the held-out pairs ``held`` (``FoldFits.held``)."""
    if held["y"].size == 0:
        return new_item_figures(
            np.zeros((0, 1)),
            held["y"],
            held["fold"],
            held["rates"],
            fits,
            held["row_a"],
            held["row_b"],
        )
    z = _rows_differences(read_vectors, held["row_a"], held["row_b"])
    return new_item_figures(
        z, held["y"], held["fold"], held["rates"], fits, held["row_a"], held["row_b"]
    )


def explore_recipe(
    read_vectors,
    *,
    max_eigenvalue,
    prior,
    prior_name: str,
    weight_by_reliability: bool,
    fold_prior=None,
    warms: FoldWarms | None = None,
) -> Recipe:
    """EXPLORE as the refit fits it (``fitting.fit_explore``), on a training part. ``fold_prior``
    (a mask over all the refit's observations → the prior from those): refitted on the part.
    ``warms``: fold k's fit starts from ``warms.starts[k]`` and leaves its own in ``warms.kept``."""

    def fit(sub: PairData, keep: np.ndarray, fold: int | None = None) -> np.ndarray:
        inner, part_prior = None, prior
        if fold_prior is not None:
            part_prior = fold_prior(keep)
            where = np.flatnonzero(keep)

            def inner(mask: np.ndarray) -> np.ndarray:
                full = np.zeros(keep.size, dtype=bool)
                full[where[mask]] = True
                return fold_prior(full)

        warm = None if warms is None or fold is None else warms.starts.get(fold)
        outcome = fitting.fit_explore(
            sub,
            read_vectors,
            max_eigenvalue=max_eigenvalue,
            prior=part_prior,
            prior_name=prior_name,
            weight_by_reliability=weight_by_reliability,
            fold_prior=inner,
            keep_differences=False,
            promise=False,
            warm=warm,
        )
        if warms is not None and fold is not None and outcome.warm is not None:
            warms.kept[fold] = outcome.warm
        return outcome.sigma

    return fit


def face_recipe(pairs: PairData, groups, read_vectors, *, k, use_pairs: bool) -> Recipe:
    """FACE on the groups and, when it learns from them, the training part's comparable pairs.
    FACE's Sigma has no scale of its own (its distances rank pairs): the fold fit is scaled by
    the factor its training part's answers prefer (``best_scale``, as EXPLORE scales a prior),
    so that a FACE version is judged as the metric it is, up to that scale."""

    def fit(sub: PairData, keep: np.ndarray, fold: int | None = None) -> np.ndarray:
        sigma = face_fits.face_prior(
            pairs, groups, read_vectors, k=k, keep=keep if use_pairs else np.zeros_like(keep)
        )
        q = np.maximum(quad_forms(_rows_differences(read_vectors, sub.row_a, sub.row_b), sigma), 0)
        if not np.any(q > 0):
            return sigma
        scale, _ = best_scale(q, sub.y, 1e6 / float(np.mean(q)), np.ones(q.size))
        return scale * sigma

    return fit


def new_items_check(
    pairs: PairData, read_vectors, recipe: Recipe, *, control_only: bool = False
) -> tuple[dict, FoldFits]:
    """The version's ``diagnostics["new_items"]`` (its figures, the answers they came from, and
    ``sample``: "control" under ``control_only``) and the fold fits (kept by ``store_folds`` once
    the version is stored). ``control_only`` (``strategies.control_only`` of the study's
    strategy): an adaptive strategy's own picks are pairs where the current metric is unsure,
    and a version's gain on them is not its gain on a fresh pair of new people."""
    folds = fold_fits(pairs, recipe, control_only)
    fig = score(folds.held(pairs), folds.fits, read_vectors)
    fitted = sum(f is not None for f in folds.fits)
    sample = "control" if control_only else "all"
    return fig.as_dict() | {"answers": len(pairs), "folds_fitted": fitted, "sample": sample}, folds


def store_folds(version, folds: FoldFits, pairs: PairData) -> None:
    storage.fold_fits_save(version, fits=folds.fits, held=folds.held(pairs))


RECHECK_ROUNDS = 5  # a refit re-judges at most this many successive current versions


def recheck_current(
    study_id: int,
    pairs: PairData,
    read_vectors,
    *,
    policy: str,
    fresh,
    watermark: int,
    control_only: bool = False,
) -> list:
    """Re-judge the study's current version of each method on the answers after it (module
    docstring of ``learning/evaluation/informative.py``) until one keeps its place; ``fresh``:
    versions stored by this refit (judged already). Returns the ids that lost their place.
    Observations are in answer order (the snapshot's), so the answers after a version are the
    observations past its count; not under the "majority" policy (one per pair).

    ``control_only`` (every strategy but random): only the answers to control pairs count, and
    the constant is their rate before the version (``annotation/labelling/strategies.py``). An
    adaptive strategy picks its own pairs where the current metric is unsure: against the rate of
    all earlier answers those picks gain about nothing whatever the metric's worth, and the
    version would lose its place to a sampler's choice, not to the answers."""
    if policy == "majority" or pairs.pair is None:
        return []
    control = hash_control(pairs.hash) if control_only else np.ones(len(pairs), dtype=bool)
    lost = []
    for method in (Method.EXPLORE, Method.FACE):
        for _ in range(RECHECK_ROUNDS):
            version = selectors.version_current(study_id=study_id, method=method)
            if version is None or version.pk in fresh:
                break
            seen = int((version.counts or {}).get("observations") or 0)
            if version.parameters.get("repeat_policy") != policy or not 0 < seen < len(pairs):
                break
            after = np.arange(len(pairs)) >= seen
            rate = np.full(1, constant_rate(pairs.y, ~after, control))
            after &= control
            held = {
                "row_a": pairs.row_a[after],
                "row_b": pairs.row_b[after],
                "y": pairs.y[after],
                "fold": np.zeros(int(after.sum()), dtype=np.int64),
                "rates": rate,
            }
            fig = score(held, [np.asarray(sigmas.sigma_of(version))], read_vectors)
            if not version_recheck(version, fig, watermark=watermark):
                break
            lost.append(version.pk)
    return lost
