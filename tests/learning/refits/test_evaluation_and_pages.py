"""What a refit leaves for people to read: WEAT and drift evaluation of ready versions, the
learning admin pages, the drift page and a failed refit on the dashboard."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Membership
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import scheduling, service
from learning.versions import selectors, storage
from learning.versions.sigmas import sigma_of

from ..synthetic import judgments_create, simulate
from .helpers import add_simulated, admin_of, versions


def weat_suite_for(study):
    from learning.models import WeatSuite, WeatTest

    suite = WeatSuite.objects.create(name="synthetic suite")
    suite.studies.add(study)
    WeatTest.objects.create(
        suite=suite,
        name="x/a",
        kind="unfair",
        x_name="x",
        y_name="y",
        a_name="a",
        b_name="b",
        x_words=[f"w{i}" for i in range(0, 6)],
        y_words=[f"w{i}" for i in range(6, 12)],
        a_words=[f"w{i}" for i in range(12, 16)],
        b_words=[f"w{i}" for i in range(16, 20)],
    )
    return suite


def test_ready_versions_are_evaluated_with_weat_and_drift(world):
    from learning.models import WeatResult

    _, _, study, users = world
    weat_suite_for(study)
    add_simulated(world, 400)
    service.refit_study(study_id=study.pk)
    first = MetricVersion.objects.get(study=study, method="explore")
    assert first.diagnostics["weat"]["tests"] == 1
    assert WeatResult.objects.filter(metric_version=first).count() == 1
    baseline = list(
        WeatResult.objects.filter(metric_version__isnull=True).values_list("id", flat=True)
    )
    assert len(baseline) == 1
    assert first.diagnostics["drift"]["previous"] is None  # nothing to compare with yet
    storage.metric_version_publish(
        version=first, user=admin_of(study), reason="a test: published whatever its verdict"
    )

    add_simulated(world, 100, seed=4, annotator=users[0])
    service.refit_study(study_id=study.pk)
    second = versions(study, method="explore")[-1]
    drift = second.diagnostics["drift"]
    assert drift["previous"]["version"] == first.pk
    assert drift["published"]["version"] == first.pk
    expected = np.abs(np.linalg.eigvalsh(sigma_of(second) - sigma_of(first))).max()
    assert drift["previous"]["operator_norm"] == pytest.approx(expected, rel=1e-6)
    # The same annotators' rule: judged on the 100 later answers (the first version rests on
    # 400), and not flagged, whatever the size of the change of Sigma.
    # (to pairs the first version never saw: the simulated pairs may repeat earlier ones)
    assert 80 <= drift["previous"]["check"]["answers"] <= 100
    assert drift["previous"]["check"]["z"] is not None
    assert drift["flagged"] is False
    # The Euclidean baseline was computed once and reused.
    assert (
        list(WeatResult.objects.filter(metric_version__isnull=True).values_list("id", flat=True))
        == baseline
    )
    assert WeatResult.objects.filter(metric_version=second).count() == 1


def test_the_learning_admin_pages_render(world, client):
    _, _, study, _ = world
    client.force_login(get_user_model().objects.create_superuser("root", password="x-pass-1"))
    settings_row = StudyLearningSettings.objects.get(study=study)
    scheduling.lease_claim(study_id=study.pk)
    for url in (
        "/admin/learning/studylearningsettings/",
        f"/admin/learning/studylearningsettings/{settings_row.pk}/change/",
        "/admin/learning/refitstate/",
    ):
        assert client.get(url).status_code == 200, url


def test_the_drift_page_says_which_sensitive_dimension_it_compared(world, client):
    _, _, study, _ = world
    add_simulated(world, 400)
    service.refit_study(study_id=study.pk)
    add_simulated(world, 400, seed=5)
    service.refit_study(study_id=study.pk)
    client.force_login(get_user_model().objects.create_user("staff-dim", is_staff=True))
    page = client.get(reverse("learning:study-drift", args=[study.pk])).content.decode()
    cell = page[page.index('data-testid="sensitive-dim-face"') :].split("</td>")[0]
    # FACE-4 is a projector: 4 directions on either side, found by the projector rule.
    assert "4 → 4" in cell, cell
    assert "projector rule" in cell, cell


def test_a_failed_refit_shows_on_the_dashboard_and_drift_page_with_the_last_good_version(
    world, client
):
    space, items, study, users = world
    add_simulated(world, 300, annotator=users[0])
    service.refit_study(study_id=study.pk)
    good = versions(study, method="explore")[0]
    # Only "comparable" answers are left once users[0] is excluded: EXPLORE cannot fit that.
    a, b, _ = simulate(space.load_matrix(), 40, seed=9)
    judgments_create(study, items, a, b, np.ones(len(a), dtype=int), annotator=users[1])
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.excluded_annotators.add(users[0])
    service.refit_study(study_id=study.pk)
    failed = versions(study, method="explore", status="failed")[0]
    assert "still missing: 1 incomparable" in failed.error

    reviewer = get_user_model().objects.create_user("rev-status")
    Membership.objects.create(user=reviewer, study=study, role=Membership.Role.REVIEWER)
    client.force_login(reviewer)
    for name in ("learning:study-dashboard", "learning:study-drift"):
        page = client.get(reverse(name, args=[study.pk])).content.decode()
        section = page[page.index('data-testid="refit-status"') :]
        explore = section[section.index('data-method="explore"') :].split("</li>")[0]
        assert "the latest refit failed" in explore, name
        assert "still missing: 1 incomparable" in explore, name
        assert f"#{good.pk} explore" in explore, name  # the last good version, linked
        assert f"#{failed.pk}" in explore, name
