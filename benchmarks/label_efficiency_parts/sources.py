"""Items and truth of the label-efficiency benchmark (pluggable: ``SOURCES``): a pool of item
vectors and the true metric Σ₀ the simulated crowd answers from (see benchmarks/label_efficiency.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRUTH_PAIRS = 10_000
TRUTH_ALPHA = 0.1  # the truth's EXPLORE penalty, fixed (see label_efficiency.py's docstring)


@dataclass(frozen=True)
class ItemSource:
    name: str
    keys: list[str]
    vectors: np.ndarray  # (n, d), the pool
    sigma0: np.ndarray  # the truth
    description: str


def glove_source(n_names: int, seed: int = 0) -> ItemSource:
    """The demo's names and opinion words (GloVe 6B 50d); Σ₀ = EXPLORE on the demo's pairs."""
    from experiments import glove_demo
    from learning.core.explore import EXPLORE

    vocabulary = glove_demo.glove_vocabulary()
    row_of = {w: i for i, w in enumerate(vocabulary)}
    names = glove_demo.popular_names(set(row_of))
    positive, negative = glove_demo.opinion_words()
    positive = [w for w in positive if w in row_of and w not in set(names)]
    negative = [w for w in negative if w in row_of and w not in set(names)]
    matrix = glove_demo.glove_matrix()

    def vectors(words):
        return np.asarray(matrix[[row_of[w] for w in words]], dtype=np.float64)

    rng = np.random.default_rng(seed)
    vn, vp, vm = vectors(names), vectors(positive), vectors(negative)
    i = rng.integers(len(names), size=(TRUTH_PAIRS, 2))
    i = i[i[:, 0] != i[:, 1]]
    z = np.vstack(
        [
            vn[i[:, 0]] - vn[i[:, 1]],
            vp[rng.integers(len(positive), size=TRUTH_PAIRS)]
            - vm[rng.integers(len(negative), size=TRUTH_PAIRS)],
        ]
    )
    y = np.r_[np.ones(len(i)), np.zeros(TRUTH_PAIRS)]
    sigma0 = EXPLORE(random_state=0, alpha=TRUTH_ALPHA).fit_differences(z, y).sigma_
    pos = rng.choice(len(positive), size=n_names // 2, replace=False)
    neg = rng.choice(len(negative), size=n_names // 2, replace=False)
    keys = names[:n_names] + [positive[k] for k in pos] + [negative[k] for k in neg]
    return ItemSource(
        "glove",
        keys,
        vectors(keys),
        sigma0,
        f"GloVe 6B 50d: {n_names} popular names + {n_names // 2} positive + {n_names // 2} "
        f"negative opinion words; Σ₀ = EXPLORE (α = {TRUTH_ALPHA}) on {len(i):,} + {TRUTH_PAIRS:,} demo pairs",
    )


def adult_source(n_names: int, seed: int = 0) -> ItemSource:
    """UCI Adult training records as the demo's record space embeds them (φ: the numerics
    standardised, the categoricals one-hot, the label excluded; 43 features); a pool of
    ``2 · n_names`` random records (as many items as ``glove``); Σ₀ = EXPLORE at
    ``TRUTH_ALPHA`` on the paper's pairs over all training records (comparable: same income
    group, opposite gender; incomparable: different income groups; ``experiments.adult.data``)."""
    from experiments.adult import data
    from learning.core.explore import EXPLORE
    from spaces.records.featuremap import apply_feature_map, build_feature_map

    frame = data.adult_frame("train")
    spec = build_feature_map(
        frame, numeric=data.NUMERIC, categorical=data.CATEGORICAL, excluded=[data.LABEL]
    )
    x = apply_feature_map(spec, frame)
    income = (frame[data.LABEL] == data.POSITIVE).to_numpy()
    pairs, comparable = data.adult_pairs(income, (frame["sex"] == "Female").to_numpy(), seed=seed)
    z = x[pairs[:, 0]] - x[pairs[:, 1]]
    sigma0 = EXPLORE(random_state=0, alpha=TRUTH_ALPHA).fit_differences(z, comparable).sigma_
    rows = np.sort(np.random.default_rng(seed).choice(len(frame), size=2 * n_names, replace=False))
    return ItemSource(
        "adult",
        [f"adult-{r}" for r in rows],
        np.asarray(x[rows], dtype=np.float64),
        sigma0,
        f"UCI Adult training records ({x.shape[1]} features, the demo's φ): {2 * n_names} at "
        f"random; Σ₀ = EXPLORE (α = {TRUTH_ALPHA}) on the paper's {comparable.sum():,} comparable "
        f"+ {(~comparable).sum():,} incomparable pairs over all {len(frame):,} records",
    )


SOURCES = {"glove": glove_source, "adult": adult_source}
