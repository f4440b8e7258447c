"""A young study, as a new team has it: 200 uploaded items in 50 dimensions and a few dozen
answers by two annotators. Every refit from 20 answers on gives an EXPLORE version with an
interval; below that, the study says which answers are missing. (Issue: 15 of 15 refits used to
fail with a Cholesky error on such data.)"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Membership
from learning.models import MetricVersion
from learning.refits import service
from learning.versions import selectors
from learning.versions.sigmas import sigma_of

from .synthetic import judgments_create, space_create, study_create

N_ITEMS, DIM = 200, 50


@pytest.fixture
def young(db, media_root):
    rng = np.random.default_rng(11)
    matrix = rng.normal(scale=0.3, size=(N_ITEMS, DIM))
    space, items = space_create(media_root, matrix=matrix, name="uploaded-200")
    study, users = study_create(space, annotators=2)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers = 1
    learning.save()
    # A truth of rank 5: answers follow P(comparable) = 2 sigmoid(-z' Sigma0 z).
    basis = np.linalg.qr(rng.normal(size=(DIM, 5)))[0]
    sigma0 = basis @ np.diag([8.0, 6.0, 4.0, 3.0, 2.0]) @ basis.T
    return space, items, study, users, sigma0, rng


def answer(young, n: int, offset: int = 0):
    space, items, study, users, sigma0, rng = young
    matrix = space.load_matrix()
    pairs = []
    while len(pairs) < n:
        a, b = sorted(rng.choice(N_ITEMS, size=2, replace=False))
        if (a, b) not in pairs:
            pairs.append((a, b))
    a, b = np.array(pairs).T
    z = matrix[a] - matrix[b]
    p = 2.0 / (1.0 + np.exp(np.einsum("ij,jk,ik->i", z, sigma0, z)))
    y = (rng.random(n) < p).astype(int)
    half = n // 2
    judgments_create(study, items, a[:half], b[:half], y[:half], annotator=users[0])
    judgments_create(study, items, a[half:], b[half:], y[half:], annotator=users[1])
    return y


def test_the_dashboard_says_what_is_missing_before_the_first_refit(young, client):
    space, items, study, users, _, _ = young
    judgments_create(study, items, range(0, 5), range(100, 105), [0] * 5, annotator=users[0])
    client.force_login(get_user_model().objects.create_user("staffer", is_staff=True))
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    status = page[page.index('data-method="explore"') :].split("</li>")[0]
    assert "still missing: 1 comparable, 14 more of either kind" in status, status
    answer(young, 30)
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    assert 'data-method="explore"' not in page  # enough answers, nothing fitted yet: no line


def explore_versions(study):
    return list(MetricVersion.objects.filter(study=study, method="explore").order_by("id"))


def test_55_answers_on_200_items_in_50_dimensions_give_an_explore_version(young):
    study = young[2]
    y = answer(young, 55)
    assert 0 < y.sum() < 55  # both labels
    service.refit_study(study_id=study.pk)
    (version,) = explore_versions(study)
    assert version.status == "ready", version.error
    sigma = sigma_of(version)
    assert np.all(np.isfinite(sigma))
    assert np.linalg.eigvalsh(sigma).min() > -1e-8
    diag = version.diagnostics
    assert diag["n_constrained"] <= 55  # the data constrain at most one direction per pair
    low, high = diag["heldout_loglik_ci"]
    assert low <= diag["heldout_loglik"] <= high


def test_every_refit_from_20_answers_on_gives_a_version(young):
    study = young[2]
    answer(young, 20)
    for _ in range(4):
        service.refit_study(study_id=study.pk)
        answer(young, 9)
    service.refit_study(study_id=study.pk)
    found = explore_versions(study)
    assert len(found) == 5
    assert [v.status for v in found] == ["ready"] * 5, [v.error for v in found]


def test_below_what_explore_needs_the_dashboard_says_what_is_missing(young, client):
    space, items, study, users, _, _ = young
    judgments_create(study, items, range(0, 12), range(100, 112), [1] * 12, annotator=users[0])
    service.refit_study(study_id=study.pk)
    (version,) = explore_versions(study)
    assert version.status == "failed"
    assert "incomparable" in version.error
    reviewer = users[1]
    Membership.objects.filter(user=reviewer, study=study).update(role=Membership.Role.REVIEWER)
    client.force_login(reviewer)
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    status = page[page.index('data-method="explore"') :].split("</li>")[0]
    assert "still missing: 1 incomparable, 7 more of either kind" in status, status


def test_the_version_page_says_how_sure_the_metric_is(young, client):
    study = young[2]
    answer(young, 40)  # 40 pairs span at most 40 of the 50 dimensions
    service.refit_study(study_id=study.pk)
    (version,) = explore_versions(study)
    client.force_login(get_user_model().objects.create_user("staff-trust", is_staff=True))
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    trust = page[page.index('data-testid="trust"') :].split("</dd>")[0]
    n = version.diagnostics["n_constrained"]
    assert f"constrain {n} of {DIM} directions" in trust, trust
    assert "held-out log-likelihood" in trust, trust
    assert "(95%," in trust, trust
    assert n == 40
    # The other 10 directions follow the prior: the fit says so, and the page shows it.
    assert any("span 40 of 50" in w for w in version.diagnostics["warnings"])
    assert "Safeguard: the pair differences span 40 of 50 dimensions" in page
