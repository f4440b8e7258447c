"""Seed the scratch database: a synthetic space, one study, its history and the annotators.

Runs in the orchestrating process (Django configured for the scratch database). The space is
``items`` random vectors; the study (pairs mode, random strategy, overlap 2 — the defaults)
starts with ``history`` answers by ten "seed" annotators, labelled from EXPLORE's response model
with a rank-3 Sigma0, so every refit of the run fits real data. The ``annotators`` load users
each get a study membership and an API token (``Authorization: Bearer fm_…``); the last
``browser`` of them also a password (``LOAD_PASSWORD``), for annotators that log in through the
login form and answer with a browser session (loadtest/browser.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SEED_USERS = 10
LOAD_USER_PREFIX = "load-annotator-"
LOAD_PASSWORD = "load-annotator-password-1"


@dataclass(frozen=True)
class World:
    study_id: int
    tokens: list[str]  # one per load annotator
    history: int
    browser_users: tuple[str, ...] = ()  # the last load annotators: LOAD_PASSWORD is theirs


def seed(
    *, annotators: int, items: int, dim: int, history: int, rng_seed: int = 0, browser: int = 0
) -> World:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import transaction

    from accounts.tokens import api_token_create
    from annotation.models import Membership, PairJudgment, Study
    from learning.models import StudyLearningSettings
    from spaces.models import EmbeddingSpace, Item

    rng = np.random.default_rng(rng_seed)
    matrix = rng.normal(scale=0.5, size=(items, dim)).astype(np.float32)
    folder = Path(settings.MEDIA_ROOT) / "spaces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "load.npy"
    np.save(path, matrix)
    User = get_user_model()
    with transaction.atomic():
        space = EmbeddingSpace.objects.create(
            name="load space",
            dimension=dim,
            matrix="spaces/load.npy",
            item_count=items,
            sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
            source="loadtest",
        )
        Item.objects.bulk_create(
            (Item(space=space, key=f"w{r}", row=r) for r in range(items)), batch_size=5000
        )
        item_ids = np.asarray(
            Item.objects.filter(space=space).order_by("row").values_list("id", flat=True)
        )
        study = Study.objects.create(name="load study", space=space, target_per_annotator=10**6)
        # Every refit that finds new answers makes a version (no churn wait): the heaviest
        # refit load, and the run's end check (a version covers the last answer) holds at once
        # instead of after the default 10 answers / 5 minutes.
        StudyLearningSettings.objects.create(
            study=study, version_min_new_answers=1, version_min_minutes=0
        )
        seeders = [User.objects.create_user(f"load-seed-{i}") for i in range(SEED_USERS)]
        users = [User.objects.create_user(f"{LOAD_USER_PREFIX}{i}") for i in range(annotators)]
        Membership.objects.bulk_create(Membership(user=u, study=study) for u in seeders + users)
        if history:
            pairs = np.unique(
                np.sort(rng.integers(0, items, size=(int(history * 1.2) + 100, 2)), axis=1), axis=0
            )
            pairs = pairs[pairs[:, 0] != pairs[:, 1]]
            pairs = pairs[rng.permutation(len(pairs))[:history]]
            basis = np.linalg.qr(rng.normal(size=(dim, 3)))[0]
            z = matrix[pairs[:, 0]] - matrix[pairs[:, 1]]
            d = 4.0 * np.sum((z @ basis) ** 2, axis=1)
            comparable = rng.random(len(pairs)) < 2 / (1 + np.exp(d))
            PairJudgment.objects.bulk_create(
                (
                    PairJudgment(
                        study=study,
                        item_a_id=int(item_ids[a]),
                        item_b_id=int(item_ids[b]),
                        label="comparable" if y else "incomparable",
                        annotator=seeders[i % SEED_USERS],
                    )
                    for i, ((a, b), y) in enumerate(zip(pairs, comparable, strict=True))
                ),
                batch_size=5000,
            )
    tokens = [api_token_create(user=u, name="load test")[1] for u in users]
    browser_users = tuple(u.username for u in users[len(users) - browser :]) if browser else ()
    if browser_users:  # one hash for all: the production hasher's cost is paid once here
        User.objects.filter(username__in=browser_users).update(
            password=make_password(LOAD_PASSWORD)
        )
    from django.db import connection

    if connection.vendor == "postgresql":  # planner statistics, as an established database has
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return World(study_id=study.pk, tokens=tokens, history=history, browser_users=browser_users)
