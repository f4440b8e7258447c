"""Publishing a metric version: atomically, by study admins only, ready versions only, from the
Django admin, and automatically when a version passes the checks."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from common.errors import Conflict, NotAllowed
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import service
from learning.versions import storage

from .helpers import add_simulated, admin_of, versions


def test_publishing_swaps_the_published_version_atomically(world):
    _, _, study, users = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    add_simulated(world, 50, seed=9, annotator=users[2])
    service.refit_study(study_id=study.pk)
    old, new = versions(study, method="explore", status="ready")
    admin = admin_of(study)
    storage.metric_version_publish(
        version=old, user=admin, reason="a test: published whatever its verdict"
    )
    storage.metric_version_publish(
        version=new, user=admin, reason="a test: published whatever its verdict"
    )
    old.refresh_from_db()
    new.refresh_from_db()
    assert (old.is_published, new.is_published) == (False, True)
    assert new.published_by == admin
    assert new.published_at is not None
    face = MetricVersion.objects.filter(study=study, method="face", is_published=True)
    assert not face.exists()  # one published version per study *and method*


def test_only_admins_publish_and_only_ready_versions(world):
    _, _, study, users = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    version = versions(study, method="explore")[0]
    with pytest.raises(NotAllowed):
        storage.metric_version_publish(version=version, user=users[0])
    failed = MetricVersion.objects.create(
        study=study, method="explore", status="failed", judgment_watermark=1
    )
    with pytest.raises(Conflict, match="only a ready version"):
        storage.metric_version_publish(version=failed, user=admin_of(study))
    assert not MetricVersion.objects.filter(study=study, is_published=True).exists()


def test_the_admin_action_publishes_through_the_service(world, client):
    _, _, study, _ = world
    add_simulated(world, 1500)  # enough for a verdict: the admin publishes informative versions
    service.refit_study(study_id=study.pk)
    version = versions(study, method="explore")[0]
    assert version.verdict == "informative"
    superuser = get_user_model().objects.create_superuser("root", password="x-pass-123")
    client.force_login(superuser)
    response = client.post(
        "/admin/learning/metricversion/",
        {"action": "publish_version", "_selected_action": [version.pk]},
    )
    assert response.status_code == 302
    version.refresh_from_db()
    assert version.is_published
    assert version.published_by == superuser


def test_auto_publish_publishes_versions_that_pass_the_checks(world):
    _, _, study, _ = world
    StudyLearningSettings.objects.filter(study=study).update(
        auto_publish=True, auto_publish_min_auc=0.6, fit_face=False
    )
    add_simulated(world, 1500)
    report = service.refit_study(study_id=study.pk)
    explore = MetricVersion.objects.get(study=study, method="explore")
    assert report.published == [explore.pk]
    assert explore.is_published
    assert explore.published_by is None
    assert explore.diagnostics["auto_publish"]["published"] is True


def test_auto_publish_refuses_versions_that_fail_a_check(world):
    _, _, study, _ = world
    StudyLearningSettings.objects.filter(study=study).update(
        auto_publish=True, auto_publish_min_auc=0.999, fit_face=False
    )
    add_simulated(world, 600)
    service.refit_study(study_id=study.pk)
    explore = MetricVersion.objects.get(study=study, method="explore")
    assert not explore.is_published
    checks = explore.diagnostics["auto_publish"]
    assert checks["published"] is False
    assert "AUC" in " ".join(checks["failed"])
