"""The app's EXPLORE fit reports held-out figures from the fits EXPLORE makes to choose its
penalty (folds by pair hash), checked against independent fits on each training side."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from learning.core._pairloss import pair_loglik, quad_forms
from learning.core.explore import EXPLORE
from learning.refits.fitting import explore_folds, fit_explore
from learning.refits.pairs import PairData, pair_hash_unit


def _pairs(n_pairs, repeats, seed):
    """Answers to ``n_pairs`` distinct item pairs, each answered ``repeats`` times."""
    rng = np.random.default_rng(seed)
    vectors = 0.5 * rng.standard_normal((200, 6))
    sigma0 = np.diag([2.0, 1.0, 0.5, 0.1, 0.1, 0.1])
    a = rng.integers(0, 100, n_pairs)
    b = rng.integers(100, 200, n_pairs)
    a, b = np.repeat(a, repeats), np.repeat(b, repeats)
    z = vectors[a] - vectors[b]
    y = (rng.uniform(size=a.size) < 2.0 * expit(-quad_forms(z, sigma0))).astype(float)
    unit = pair_hash_unit(a, b)
    pairs = PairData(row_a=a, row_b=b, y=y, held_out=unit < 0.2, hash=unit)
    return pairs, vectors


def test_folds_keep_every_answer_to_a_pair_together():
    pairs, _ = _pairs(300, 3, 0)
    fold = explore_folds(pairs, 6)
    assert set(np.unique(fold)) == {0, 1, 2, 3, 4}  # below 2,000 observations: five folds
    per_pair = fold.reshape(-1, 3)
    assert np.all(per_pair == per_pair[:, :1])
    big, _ = _pairs(1000, 3, 1)
    fold = explore_folds(big, 6)  # 3,000 observations × 6 dimensions: still five folds
    assert set(np.unique(fold)) == {0, 1, 2, 3, 4}
    assert np.all(fold.reshape(-1, 3) == fold.reshape(-1, 3)[:, :1])
    fold = explore_folds(big, 300)  # × 300 dimensions: the study's held-out share, one split
    assert set(np.unique(fold)) == {-1, 0}
    assert np.array_equal(fold == 0, big.held_out)


def test_heldout_figures_match_independent_fits_on_each_training_side():
    pairs, vectors = _pairs(300, 2, 2)
    out = fit_explore(pairs, lambda rows: vectors[rows], max_eigenvalue=None)
    diag = out.diagnostics
    fold = explore_folds(pairs, vectors.shape[1])
    z = vectors[pairs.row_a] - vectors[pairs.row_b]
    per_pair = np.empty(pairs.y.size)
    for f in range(5):
        held = fold == f
        m = EXPLORE(alpha=diag["penalty"], random_state=0).fit_differences(z[~held], pairs.y[~held])
        per_pair[held] = pair_loglik(quad_forms(z[held], m.sigma_), pairs.y[held])
    assert diag["heldout_pairs"] == pairs.y.size
    assert diag["heldout_folds"] == "pair hash"
    assert abs(diag["heldout_loglik"] - per_pair.mean()) < 2e-3
    lo, hi = diag["heldout_loglik_ci"]
    assert lo < diag["heldout_loglik"] < hi
    assert diag["heldout_auc"] > 0.6
