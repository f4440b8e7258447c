"""A small synthetic world for refit tests: a space with a known Sigma0 and simulated answers.

Answers follow EXPLORE's response model, P(comparable) = 2 sigmoid(-z' Sigma0 z), so a fit can
be checked against the truth.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model

from annotation.models import Membership, PairJudgment, Study
from learning.versions import selectors
from spaces.models import EmbeddingSpace, Item

D = 6
# Two relevant directions (large weight) and four sensitive ones (weight 0).
SIGMA0 = np.diag([3.0, 2.0, 0.0, 0.0, 0.0, 0.0])


def space_create(
    media_root: Path,
    *,
    n_items: int = 80,
    d: int = D,
    seed: int = 0,
    name: str = "synthetic",
    matrix: np.ndarray | None = None,
) -> tuple[EmbeddingSpace, list[Item]]:
    if matrix is None:
        matrix = np.random.default_rng(seed).normal(scale=0.6, size=(n_items, d))
    n_items, d = matrix.shape
    folder = media_root / "spaces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.npy"
    np.save(path, matrix)
    space = EmbeddingSpace.objects.create(
        name=name,
        dimension=d,
        matrix=f"spaces/{name}.npy",
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        item_count=n_items,
    )
    Item.objects.bulk_create(Item(space=space, key=f"w{row}", row=row) for row in range(n_items))
    return space, list(Item.objects.filter(space=space).order_by("row"))


def study_create(
    space: EmbeddingSpace, *, name: str = "synthetic study", annotators: int = 3
) -> tuple[Study, list]:
    study = Study.objects.create(name=name, space=space)
    users = []
    for number in range(annotators):
        user = get_user_model().objects.create_user(f"{name[:20]}-a{number}", password="x-pass-123")
        Membership.objects.create(user=user, study=study)
        users.append(user)
    return study, users


def simulate(
    matrix: np.ndarray, n_pairs: int, *, sigma0: np.ndarray = SIGMA0, seed: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct canonical row pairs (a < b) and labels drawn from the response model."""
    rng = np.random.default_rng(seed)
    n = matrix.shape[0]
    a = rng.integers(0, n, size=4 * n_pairs)
    b = rng.integers(0, n, size=4 * n_pairs)
    keep = a != b
    pairs = np.unique(np.sort(np.stack([a[keep], b[keep]], axis=1), axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:n_pairs]]
    z = matrix[pairs[:, 0]] - matrix[pairs[:, 1]]
    d = np.einsum("ij,jk,ik->i", z, sigma0, z)
    p_comparable = 2.0 / (1.0 + np.exp(d))
    labels = (rng.random(len(pairs)) < p_comparable).astype(int)
    return pairs[:, 0], pairs[:, 1], labels


def judgments_create(
    study: Study, items: list[Item], row_a, row_b, labels, *, annotator=None, label_names=None
) -> list[PairJudgment]:
    """Bulk-create judgments from row pairs and 0/1/2 labels (incomparable/comparable/unsure)."""
    names = label_names or {0: "incomparable", 1: "comparable", 2: "unsure"}
    rows = []
    for a, b, y in zip(row_a, row_b, labels, strict=True):
        first, second = sorted((items[int(a)], items[int(b)]), key=lambda item: item.pk)
        rows.append(
            PairJudgment(
                study=study,
                item_a=first,
                item_b=second,
                label=names[int(y)],
                annotator=annotator,
                source="annotated" if annotator else "imported",
            )
        )
    return PairJudgment.objects.bulk_create(rows, batch_size=2000)


def judged_study(media_root, *, name, n_items, answers, seed, labels=None):
    """A study of two annotators whose first ``answers`` follow ``SIGMA0`` (or ``labels``), its
    refits auto-publishing an informative version (validity tests): study, items, users, matrix."""
    space, items = space_create(media_root, n_items=n_items, seed=seed, name=name)
    study, users = study_create(space, name=name, annotators=2)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.fit_face = False
    learning.auto_publish = True
    learning.auto_publish_min_auc = None
    learning.save()
    matrix = np.load(media_root / "spaces" / f"{name}.npy")
    a, b, y = simulate(matrix, answers, seed=seed + 1)
    if labels is not None:
        y = labels(np.random.default_rng(seed + 2), y.size)
    judgments_create(study, items, a, b, y, annotator=users[0])
    return study, items, users, matrix
