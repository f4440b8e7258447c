"""A WEAT test saved on its page is computed by a REAL Celery worker (a private Redis, the real
test database): the Euclidean baseline and one result per ready version, equal to what the
evaluation computes in this process."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import transaction

from annotation.models import Membership
from learning.evaluation import weat_tests
from learning.evaluation.weat import weat_outcomes
from learning.models import WeatResult
from learning.versions.sigmas import sigma_of
from tests.annotation.factories import make_metric_version, make_user
from tests.celery_support import wait_for

from .synthetic import space_create, study_create
from .test_refit_worker import refit_rig  # noqa: F401  (fixture)

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_a_saved_test_is_computed_by_the_worker(refit_rig):  # noqa: F811
    start, media, _ = refit_rig
    space, _ = space_create(media, n_items=30, d=5, name="weat-worker")
    study, _ = study_create(space, annotators=1)
    admin = make_user("weat-admin", study=study, role=Membership.Role.ADMIN)
    rng = np.random.default_rng(3)
    root = rng.normal(size=(5, 5))
    versions = [
        make_metric_version(study=study, method="face", sigma=np.eye(5) * 2, label="f"),
        make_metric_version(study=study, method="explore", sigma=root @ root.T, label="e"),
    ]
    draft = weat_tests.weat_draft(
        study=study,
        name="worker test",
        kind="unfair",
        names={"x_name": "X", "y_name": "Y", "a_name": "A", "b_name": "B"},
        words={"x_words": "w0\nw1\nw2", "y_words": "w3, w4, w5", "a_words": "w6", "b_words": "w7"},
    )
    start()
    with transaction.atomic():
        test = weat_tests.weat_test_save(user=admin, study=study, draft=draft)
    wait_for(
        lambda: WeatResult.objects.filter(test=test).count() == 3,
        90,
        "the Euclidean result and one per version",
    )
    for version in [None, *versions]:
        stored = WeatResult.objects.get(test=test, metric_version=version)
        sigma = None if version is None else sigma_of(version)
        [(_, outcome, _)] = weat_outcomes([test], space, sigma, n_boot=0)
        assert stored.effect_size == pytest.approx(outcome.effect_size)
        assert stored.p_value == pytest.approx(outcome.p_value)
        assert stored.exact
        assert stored.ci_low is not None
