"""What an EXPLORE version promises the drift flag (``diagnostics["drift_promise"]``): the gain
per answer over guessing its answers' comparable rate, on answers it did not see (its validation
folds), for the Σ it stores, with a standard error that treats a pair's answers as one cluster.

Two samples: ``all`` (every held-out answer but gold) and ``control`` (those to control pairs,
``annotation/labelling/strategies.py: pair_control``), because the flag compares like with like:
a study sampled by ``random`` is judged on every answer, any other strategy on its control
pairs, which it only ever offers as uniform draws (``learning/versions/drift.py``). Each has
the mean gain (``gain``, ``se``: the flag's figure) and the mean surprise (``surprise``,
``surprise_se``: ``learning.core.drift.answer_surprises``, the all-answers test
``benchmarks/drift.py`` measures beside the flag; the app does not flag by it).

**As stored.** The held-out distances of the plain fit's folds are the stored model's when the
version is not weighted. A reliability-weighted version stores the EM's Σ, which predicts the
true label, each answer flipped at its annotator's rate: each fold is fitted again the way the
EM's last step fits — the E-step's soft labels of that fold's training pairs under the fold's
own plain fit and the EM's flip rates, then EXPLORE at the EM's penalty, starting from the
fold's plain fit — and its held-out answers are scored as the weighted model scores answers,
flipped at the annotators' mean estimated rate (``flip_rate``, stored here and used for the
later answers too). The flip rates and the penalty come from all answers (the held-out ones
included): a small leak, measured in ``benchmarks/drift.py``'s table.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from annotation.labelling.strategies import CONTROL_SHARE, hash_control
from learning.core.drift import (
    answer_gains,
    answer_surprises,
    heldout_promise,
)
from learning.core.explore import EXPLORE, ExploreWarm
from learning.refits.pairs import PairData

FLIP_MAX = 0.49


def mean_flip_rate(reliable) -> float:
    """The answers' mean flip rate the EM estimated (weighted by the annotators' answers)."""
    rel = reliable.reliability_
    answers = float(np.sum(rel.n_answers))
    if not answers:
        return 0.0
    return min(FLIP_MAX, float(np.sum(rel.n_answers * rel.flip_rate)) / answers)


def _fold_soft_labels(z, pairs, of_pair, m, sigma, reliable) -> np.ndarray:
    """Per pair, P(true label comparable | its answers) under a fold's ``sigma`` and the EM's
    flip rates (``learning/core/reliability.py``'s E-step; gold: the known truth)."""
    p = np.clip(2.0 * expit(-np.maximum(np.einsum("ij,ij->i", z @ sigma, z), 0.0)), 1e-9, 1 - 1e-9)
    rel = reliable.reliability_
    where = np.searchsorted(rel.annotator, pairs.annotator).clip(0, rel.annotator.size - 1)
    e = np.clip(np.asarray(rel.flip_rate)[where], 1e-9, 0.5)
    known = (pairs.y == 0) | (pairs.y == 1)
    evidence = np.where(known, 2.0 * pairs.y - 1.0, 0.0) * np.log((1.0 - e) / e)
    logit = np.bincount(of_pair, evidence, minlength=m)
    soft = np.empty(m)
    first = np.unique(of_pair, return_index=True)[1]
    soft[of_pair[first]] = expit(np.log(p[first]) - np.log1p(-p[first]) + logit[of_pair[first]])
    if pairs.gold is not None:
        gold = np.isfinite(pairs.gold)
        soft[of_pair[gold]] = pairs.gold[gold]
    return soft


def _weighted_fold_distances(
    z: np.ndarray, pairs: PairData, folds: np.ndarray, plain, reliable, params, fold_priors
) -> np.ndarray:
    """Held-out squared distances under each fold's weighted fit (module docstring)."""
    _, first, inverse = np.unique(pairs.pair, return_index=True, return_inverse=True)
    of_pair = inverse.ravel()
    starts = plain.warm_state_.folds or ()
    distances = np.full(len(pairs), np.nan)
    for k, f in enumerate(np.unique(folds[folds >= 0])):
        if k >= len(starts):
            raise ValueError("the fold fits are unknown")
        # the E-step under the fold's own plain fit, which never saw the held-out answers
        soft = _fold_soft_labels(z, pairs, of_pair, first.size, starts[k], reliable)
        train = first[folds[first] != f]  # one row per training pair: its first answer
        prior = fold_priors[k] if fold_priors is not None else params.get("prior")
        settings = params | {"prior": prior, "alpha": reliable.explore_.alpha_}
        model = EXPLORE(**settings, warm_start=ExploreWarm(starts[k]))
        model.fit_differences(z[train], soft[of_pair[train]])
        held = folds == f
        distances[held] = np.maximum(np.einsum("ij,ij->i", z[held] @ model.sigma_, z[held]), 0.0)
    return distances


def drift_promise(
    z, pairs: PairData, folds, plain, reliable=None, params=None, fold_priors=None
) -> dict | None:
    """The promise of a version fitted on ``pairs`` (differences ``z``; ``folds``: the
    validation folds its fit used, None when EXPLORE chose its own; ``plain``: the plain fit;
    ``reliable``: the EM when the version is weighted, with the ``params`` and ``fold_priors``
    of its fits). None when no answer was held out, or a weighted version's folds are unknown
    or too small to fit."""
    rows = getattr(z, "z", z)
    if reliable is None:
        distances, flip, fit = plain.heldout_distances_, 0.0, "unweighted"
    elif folds is None or pairs.pair is None:
        return None
    else:
        try:
            distances = _weighted_fold_distances(
                rows, pairs, folds, plain, reliable, dict(params or {}), fold_priors
            )
        except ValueError:  # a fold's training pairs too few for EXPLORE: no promise yet
            return None
        flip, fit = mean_flip_rate(reliable), "weighted"
    held = np.isfinite(distances)
    if pairs.gold is not None:
        held &= ~np.isfinite(pairs.gold)
    if not held.any():
        return None
    rate = float(np.mean(pairs.y))
    scored = np.where(held, distances, 0.0)
    gains = answer_gains(scored, pairs.y, rate, flip)
    surprises = answer_surprises(scored, pairs.y, rate, flip)
    clusters = pairs.pair if pairs.pair is not None else np.arange(len(pairs))
    out = {"rate": rate, "flip_rate": flip, "fit": fit, "control_share": CONTROL_SHARE}
    for name, keep in (("all", held), ("control", held & hash_control(pairs.hash))):
        if np.unique(clusters[keep]).size < 2:
            out[name] = None
            continue
        fold = None if folds is None else np.asarray(folds)[keep]
        gain, se = heldout_promise(gains[keep], clusters[keep], fold)
        surprise, surprise_se = heldout_promise(surprises[keep], clusters[keep], fold)
        out[name] = {
            "gain": float(gain),
            "se": float(se),
            "surprise": float(surprise),
            "surprise_se": float(surprise_se),
            "answers": int(keep.sum()),
            "pairs": int(np.unique(clusters[keep]).size),
        }
    return out
