"""The sensitive directions of the Adult runs: the authors' recipe and the app's.

* **authors** (SenSR's ``get_sensitive_directions_and_projection_matrix``): a two-class softmax
  regression predicts gender from the features without the gender columns — no hidden layer,
  Adam (lr 1e-3) on the cross-entropy plus ``0.1 · ½‖W‖²``, 5,000 steps of class-balanced
  batches of 5,000 drawn without replacement, weights uniform in ``±sqrt(6 / (fan_in +
  fan_out))``, biases 0.1 — and **both** of its weight vectors (zero on the gender columns)
  join the gender and race axes; an SVD reduces them to an orthonormal basis (4 vectors with
  gender). Their features hold one indicator per attribute (``sex_ Male``, ``race_ White``);
  ours hold two one-hot columns, so their axes are ``(e_Male − e_Female)/√2`` and
  ``(e_White − e_Non-white)/√2`` here — the direction a flip of the attribute moves a record.
* **app** (:func:`experiments.adult.data.gender_directions`, what the demo projected out until
  2026-11-26): one logistic regression plus the four one-hot axes (rank 5), orthonormalised.

The demo (:mod:`experiments.adult.demo`) projects by the authors' recipe and records it
(:func:`authors_recorded`); :func:`directions_of` rebuilds either record from a version's
parameters.

numpy and scikit-learn only.
"""

from __future__ import annotations

import numpy as np

from experiments.adult.data import (
    GENDER_COLUMN,
    RACE_COLUMN,
    app_directions_of,
    gender_directions,
)

L2 = 0.1
STEPS = 5_000
BATCH = 5_000
LR = 1e-3
RECIPES = ("authors", "app")


def _adam(params, grads, state, t):
    b1, b2, eps = 0.9, 0.999, 1e-8
    rate = LR * np.sqrt(1 - b2**t) / (1 - b1**t)
    for i, (p, g) in enumerate(zip(params, grads, strict=True)):
        m, v = state[i]
        m[:] = b1 * m + (1 - b1) * g
        v[:] = b2 * v + (1 - b2) * g * g
        p -= rate * m / (np.sqrt(v) + eps)


def softmax_weights(
    x: np.ndarray, target: np.ndarray, *, seed: int, steps: int = STEPS
) -> np.ndarray:
    """The (d, 2) weights of the authors' two-class softmax regression of ``target`` on ``x``."""
    rng = np.random.default_rng(seed)
    target = np.asarray(target, dtype=bool)
    blocks = [np.asarray(x, dtype=np.float32)[~target], np.asarray(x, dtype=np.float32)[target]]
    d = blocks[0].shape[1]
    bound = np.sqrt(6.0 / (d + 2))
    w = rng.uniform(-bound, bound, size=(d, 2))
    b = np.full(2, 0.1)
    state = [(np.zeros_like(w), np.zeros_like(w)), (np.zeros_like(b), np.zeros_like(b))]
    per_class = min(BATCH // 2, *(len(block) for block in blocks))
    onehot = np.repeat(np.eye(2), per_class, axis=0)
    for t in range(1, steps + 1):
        xb = np.concatenate(
            [block[rng.choice(len(block), per_class, replace=False)] for block in blocks]
        )
        logits = xb @ w.astype(np.float32) + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) / len(xb)
        _adam([w, b], [(xb.T @ g).astype(np.float64) + L2 * w, g.sum(axis=0)], state, t)
    return w


def orthonormal(vectors: np.ndarray, tol: float = 1e-8) -> np.ndarray:
    """An orthonormal basis (rows) of the span of the rows of ``vectors`` (their SVD)."""
    _, s, vt = np.linalg.svd(np.atleast_2d(vectors), full_matrices=False)
    return vt[s > s.max() * tol]


def gender_weights(
    vectors: np.ndarray, names: list[str], female: np.ndarray, *, seed: int, steps: int = STEPS
) -> dict[str, np.ndarray]:
    """The softmax regression's two weights of each feature but the gender columns, by name."""
    others = [i for i, n in enumerate(names) if not n.startswith(f"{GENDER_COLUMN}=")]
    weights = softmax_weights(vectors[:, others], female, seed=seed, steps=steps)
    return {names[i]: weights[j] for j, i in enumerate(others)}


def _flip_axes(names: list[str]) -> list[list[str]]:
    """The authors' flip axes present in ``names``, each as ``[plus column, minus column]``."""
    pairs = [
        [f"{GENDER_COLUMN}=Male", f"{GENDER_COLUMN}=Female"],
        [f"{RACE_COLUMN}=White", f"{RACE_COLUMN}=Non-white"],
    ]
    return [pair for pair in pairs if pair[0] in names]


def _basis(names: list[str], weights: dict, axes: list[list[str]]) -> np.ndarray:
    vectors = np.array([weights.get(n, np.zeros(2)) for n in names], dtype=float).T
    flips = []
    for plus, minus in axes:
        axis = np.zeros(len(names))
        axis[names.index(plus)], axis[names.index(minus)] = 1.0, -1.0
        flips.append(axis / np.sqrt(2))
    return orthonormal(np.vstack([vectors, *flips]))


def authors_directions(names: list[str], weights: dict[str, np.ndarray]) -> np.ndarray:
    """The authors' sensitive directions (orthonormal rows) for φ with or without gender.

    ``weights`` (:func:`gender_weights`) are zero on the gender columns; the same regression
    serves φ with and without them (its features are the same either way).
    """
    return _basis(names, weights, _flip_axes(names))


def authors_recorded(
    vectors: np.ndarray, names: list[str], female: np.ndarray, *, seed: int, steps: int = STEPS
) -> tuple[np.ndarray, dict]:
    """:func:`authors_directions` of ``vectors`` and what rebuilds them (:func:`directions_of`).

    The record (a version's ``parameters["sensitive_directions"]``) holds the recipe, the
    regression's settings and seed, its two weights per feature by name and the flip axes by
    column name; :func:`directions_of` turns it back into the same rows.
    """
    weights = gender_weights(vectors, names, female, seed=seed, steps=steps)
    axes = _flip_axes(names)
    record = {
        "recipe": "authors",
        "regression": f"two-class softmax regression predicting {GENDER_COLUMN}=Female from the "
        f"features without the {GENDER_COLUMN} columns (SenSR's code): Adam lr {LR}, "
        f"L2 {L2} * 0.5 * ||W||^2, {steps} steps of class-balanced batches of {BATCH}, "
        "Glorot-uniform weights, biases 0.1 (experiments.adult.directions.softmax_weights)",
        "seed": seed,
        "steps": steps,
        "weights": {name: [float(v) for v in w] for name, w in weights.items()},
        "axes": axes,
        "basis": "SVD of the weights' two vectors (zero on the gender columns) and the flip "
        "axes (e_plus - e_minus)/sqrt(2): orthonormal rows",
    }
    return _basis(names, record["weights"], axes), record


def directions_of(sensitive: dict, feature_names: list[str]) -> np.ndarray:
    """The sensitive directions (rows) a version's ``parameters["sensitive_directions"]`` records.

    Reads the authors' recipe (:func:`authors_recorded`, the demo since 2026-11-26) and the
    earlier demo versions' record (the app's recipe, :func:`experiments.adult.data.app_directions_of`).
    """
    if sensitive.get("recipe") == "authors":
        return _basis(feature_names, sensitive["weights"], sensitive["axes"])
    if "gender_classifier_coefficients" in sensitive:
        return app_directions_of(sensitive, feature_names)
    raise ValueError("unknown record of sensitive directions")


def sensitive_directions(
    recipe: str,
    vectors: np.ndarray,
    names: list[str],
    female: np.ndarray,
    *,
    seed: int,
    weights: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Orthonormal sensitive directions (k × d) by ``recipe`` (:data:`RECIPES`)."""
    if recipe == "authors":
        if weights is None:
            weights = gender_weights(vectors, names, female, seed=seed)
        return authors_directions(names, weights)
    if recipe == "app":
        if f"{GENDER_COLUMN}=Female" not in names:
            raise ValueError("the app's recipe needs the gender columns (with gender only)")
        return orthonormal(gender_directions(vectors, names)[0])
    raise ValueError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}")


def complement_projector(directions: np.ndarray) -> np.ndarray:
    """``I − P``: SenSR's own metric, P the projector on the span of ``directions``."""
    basis = orthonormal(directions)
    return np.eye(basis.shape[1]) - basis.T @ basis
