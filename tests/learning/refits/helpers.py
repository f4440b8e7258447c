"""Steps the refit tests share: simulated answers, a study's versions, a study admin."""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model

from annotation.models import Membership
from learning.models import MetricVersion

from ..synthetic import judgments_create, simulate


def add_simulated(world, n_pairs: int, *, seed: int = 1, annotator=None, flips: float = 0.0):
    """``n_pairs`` distinct random pairs answered under Σ₀, a share ``flips`` of the answers
    flipped (drawn from ``seed``)."""
    space, items, study, _ = world
    a, b, y = simulate(space.load_matrix(), n_pairs, seed=seed)
    if flips:
        y = np.where(np.random.default_rng(seed).random(y.size) < flips, 1 - y, y)
    return judgments_create(study, items, a, b, y, annotator=annotator)


def versions(study, **filters):
    return list(MetricVersion.objects.filter(study=study, **filters).order_by("id"))


def admin_of(study):
    admin = get_user_model().objects.create_user("study-admin", password="x-pass-123")
    Membership.objects.create(user=admin, study=study, role="admin")
    return admin
