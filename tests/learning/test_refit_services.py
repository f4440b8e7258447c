"""learning.refits.service.refit_study and publishing, on a small synthetic space with a known Sigma0."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Membership, PairJudgment
from common.errors import Conflict, NotAllowed
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import fitting, scheduling, service, snapshots
from learning.versions import selectors, storage
from learning.versions.sigmas import sigma_of

from .synthetic import SIGMA0, judgments_create, simulate, space_create, study_create


@pytest.fixture
def world(db, media_root):
    space, items = space_create(media_root)
    study, users = study_create(space)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.face_components = 4
    learning.version_min_new_answers = 1  # every change is worth a version, unless a test says
    learning.save()
    return space, items, study, users


def add_simulated(world, n_pairs: int, *, seed: int = 1, annotator=None):
    space, items, study, _ = world
    a, b, y = simulate(space.load_matrix(), n_pairs, seed=seed)
    return judgments_create(study, items, a, b, y, annotator=annotator)


def versions(study, **filters):
    return list(MetricVersion.objects.filter(study=study, **filters).order_by("id"))


def test_refit_stores_ready_face_and_explore_versions_covering_every_judgment(world):
    _, _, study, _ = world
    add_simulated(world, 600)
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "fitted"
    ready = versions(study, status="ready")
    assert sorted(v.method for v in ready) == ["explore", "face"]
    top = PairJudgment.objects.filter(study=study).order_by("-id").first().pk
    for version in ready:
        assert version.judgment_watermark == top
        assert version.counts["judgments"] == 600
        sigma = sigma_of(version)
        assert sigma.shape == (6, 6)
        assert version.dimension == 6
        with open(version.sigma.path, "rb") as handle:
            assert hashlib.sha256(handle.read()).hexdigest() == version.sigma_sha256
        assert np.all(np.linalg.eigvalsh(sigma) > -1e-8)  # PSD
        assert version.fit_seconds > 0


def test_explore_diagnostics_are_sane_and_recover_the_relevant_directions(world):
    _, _, study, _ = world
    add_simulated(world, 2500)
    service.refit_study(study_id=study.pk)
    explore = MetricVersion.objects.get(study=study, method="explore")
    diag = explore.diagnostics
    assert diag["converged"] is True
    assert diag["iterations"] >= 1
    assert diag["heldout_folds"] == "pair hash"
    assert diag["heldout_loglik"] <= 0
    assert diag["heldout_auc"] > 0.7  # labels depend strongly on the metric
    assert len(diag["spectrum"]) == 6
    assert explore.counts["held_out"] == pytest.approx(
        0.2 * explore.counts["observations"], rel=0.25
    )
    sigma = sigma_of(explore)
    relevant, sensitive = sigma[:2, :2], sigma[2:, 2:]
    assert np.linalg.norm(sensitive) < 0.25 * np.linalg.norm(relevant)
    assert np.linalg.norm(sigma - SIGMA0) < 0.5 * np.linalg.norm(SIGMA0)


def test_face_from_comparable_pairs_finds_the_sensitive_subspace(world):
    _, _, study, _ = world
    add_simulated(world, 2500)
    service.refit_study(study_id=study.pk)
    face = MetricVersion.objects.get(study=study, method="face")
    sigma = sigma_of(face)
    # Comparable pairs differ mostly along the four weightless directions, so FACE-4's
    # Sigma = I - QQ' keeps (close to) the two relevant ones only.
    truth = np.diag([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert np.linalg.norm(sigma - truth, 2) < 0.35
    assert face.diagnostics["n_components"] == 4
    assert face.diagnostics["heldout_auc"] > 0.6


def test_refit_without_new_data_does_nothing(world, django_assert_max_num_queries):
    _, _, study, _ = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    before = versions(study)
    with django_assert_max_num_queries(14):
        report = service.refit_study(study_id=study.pk)
    assert report.outcome == "nothing new"
    assert versions(study) == before


def test_new_answers_give_new_versions_whose_parent_is_the_previous_ready_one(world):
    _, _, study, users = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    first = {v.method: v for v in versions(study)}
    add_simulated(world, 50, seed=7, annotator=users[0])
    service.refit_study(study_id=study.pk)
    latest = {v.method: v for v in versions(study)}  # later ids win
    for method in ("face", "explore"):
        assert latest[method].pk != first[method].pk
        assert latest[method].parent_id == first[method].pk
        assert latest[method].judgment_watermark > first[method].judgment_watermark


def test_snapshot_queries_do_not_grow_with_the_number_of_judgments(world):
    _, _, study, users = world
    add_simulated(world, 200)
    with CaptureQueriesContext(connection) as small:
        service.refit_study(study_id=study.pk)
    add_simulated(world, 1500, seed=3, annotator=users[1])
    with CaptureQueriesContext(connection) as large:
        service.refit_study(study_id=study.pk)
    assert len(large.captured_queries) <= len(small.captured_queries) + 2


def test_a_deleted_answer_counts_as_new_data(world):
    _, _, study, _ = world
    created = add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    assert study.pk not in snapshots.study_ids_with_newer_data()
    PairJudgment.objects.filter(pk=created[10].pk).delete()
    assert study.pk in snapshots.study_ids_with_newer_data()
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert study.pk not in snapshots.study_ids_with_newer_data()


def repeated_answers(world):
    """Pair 0-1 answered 2x comparable + 1x incomparable, pair 2-3 tied, pair 4-5 unsure."""
    _, items, study, users = world
    plan = [
        ((0, 1), ["comparable", "comparable", "incomparable"]),
        ((2, 3), ["comparable", "incomparable", "unsure"]),
        ((4, 5), ["unsure", "unsure", "unsure"]),
        ((6, 7), ["incomparable", "incomparable", "incomparable"]),
    ]
    for (a, b), labels in plan:
        for user, label in zip(users, labels, strict=True):
            PairJudgment.objects.create(
                study=study, item_a=items[a], item_b=items[b], label=label, annotator=user
            )
    top = PairJudgment.objects.filter(study=study).order_by("-id").first().pk
    return snapshots.judgment_snapshot(study_id=study.pk, watermark=top, excluded_annotators=[])


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("majority", [0.0, 1.0]),  # 0-1 by majority, 6-7; the tie and the unsure pair dropped
        ("drop_unsure", [0.0] * 5 + [1.0] * 3),
        ("all", [0.0] * 5 + [0.5] * 4 + [1.0] * 3),
    ],
)
def test_repeat_policies_turn_answers_into_observations(world, policy, expected):
    snapshot = repeated_answers(world)
    pairs = fitting.pair_data(snapshot, policy=policy, validation_share=0.2)
    assert sorted(pairs.y.tolist()) == expected


def test_every_answer_to_a_pair_falls_on_the_same_side_of_the_validation_split(world):
    snapshot = repeated_answers(world)
    pairs = fitting.pair_data(snapshot, policy="all", validation_share=0.5)
    for a, b in {(int(x), int(y)) for x, y in zip(pairs.row_a, pairs.row_b, strict=True)}:
        sides = pairs.held_out[(pairs.row_a == a) & (pairs.row_b == b)]
        assert sides.all() or not sides.any()


def test_excluded_annotators_are_left_out(world):
    _, _, study, users = world
    add_simulated(world, 200, annotator=users[0])
    add_simulated(world, 100, seed=5, annotator=users[1])
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.excluded_annotators.add(users[1])
    service.refit_study(study_id=study.pk)
    explore = MetricVersion.objects.get(study=study, method="explore", status="ready")
    assert explore.counts["judgments"] == 200
    assert explore.counts["judgments_total"] == 300
    assert explore.parameters["excluded_annotators"] == [users[1].pk]


def test_changed_settings_refit_the_same_data(world):
    _, _, study, _ = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    StudyLearningSettings.objects.filter(study=study).update(repeat_policy="drop_unsure")
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert len(versions(study, status="ready")) == 4


def admin_of(study):
    admin = get_user_model().objects.create_user("study-admin", password="x-pass-123")
    Membership.objects.create(user=admin, study=study, role="admin")
    return admin


def test_one_class_only_fails_readably_and_the_published_version_stays(world):
    _, _, study, users = world
    a, b, y = simulate(world[0].load_matrix(), 300)
    judgments_create(study, world[1], a[y == 1], b[y == 1], y[y == 1], annotator=users[0])
    judgments_create(study, world[1], a[y == 0], b[y == 0], y[y == 0], annotator=users[1])
    service.refit_study(study_id=study.pk)
    published = MetricVersion.objects.get(study=study, method="explore", status="ready")
    storage.metric_version_publish(version=published, user=admin_of(study))

    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.excluded_annotators.add(users[1])  # only comparable answers remain
    service.refit_study(study_id=study.pk)

    failed = MetricVersion.objects.get(study=study, method="explore", status="failed")
    assert "still missing: 1 incomparable" in failed.error
    assert failed.transient is False
    assert not failed.sigma
    published.refresh_from_db()
    assert published.is_published
    assert MetricVersion.objects.filter(study=study, is_published=True).count() == 1
    # The same input is not retried, so a sweep does not loop on a failure.
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"


def test_an_interrupted_fit_is_retired_and_refitted_once(world):
    _, _, study, _ = world
    add_simulated(world, 300)
    marks = snapshots.study_data_marks(study_id=study.pk)
    orphan = MetricVersion.objects.create(
        study=study,
        method="explore",
        judgment_watermark=marks.judgment_watermark,
        group_watermark=marks.group_watermark,
        status="fitting",
    )
    service.refit_study(study_id=study.pk)
    orphan.refresh_from_db()
    assert orphan.status == "failed"
    assert orphan.transient
    assert "Interrupted" in orphan.error
    ready = versions(study, method="explore", status="ready")
    assert len(ready) == 1
    assert ready[0].judgment_watermark == marks.judgment_watermark


def test_a_held_lease_makes_a_second_refit_wait(world):
    _, _, study, _ = world
    add_simulated(world, 100)
    token = scheduling.lease_claim(study_id=study.pk)
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "busy"
    assert report.retry_in > 1
    assert versions(study) == []
    scheduling.lease_release(study_id=study.pk, token=token, outcome="test")
    assert service.refit_study(study_id=study.pk).outcome == "fitted"


def test_publishing_swaps_the_published_version_atomically(world):
    _, _, study, users = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    add_simulated(world, 50, seed=9, annotator=users[2])
    service.refit_study(study_id=study.pk)
    old, new = versions(study, method="explore", status="ready")
    admin = admin_of(study)
    storage.metric_version_publish(version=old, user=admin)
    storage.metric_version_publish(version=new, user=admin)
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
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    version = versions(study, method="explore")[0]
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
    storage.metric_version_publish(version=first, user=admin_of(study))

    add_simulated(world, 100, seed=4, annotator=users[0])
    service.refit_study(study_id=study.pk)
    second = versions(study, method="explore")[-1]
    drift = second.diagnostics["drift"]
    assert drift["previous"]["version"] == first.pk
    assert drift["published"]["version"] == first.pk
    expected = np.abs(np.linalg.eigvalsh(sigma_of(second) - sigma_of(first))).max()
    assert drift["previous"]["operator_norm"] == pytest.approx(expected, rel=1e-6)
    assert drift["flagged"] == (expected > 0.5)
    # The Euclidean baseline was computed once and reused.
    assert (
        list(WeatResult.objects.filter(metric_version__isnull=True).values_list("id", flat=True))
        == baseline
    )
    assert WeatResult.objects.filter(metric_version=second).count() == 1


def test_a_refit_of_a_deleted_study_says_so(db):
    from annotation.models import Study

    with pytest.raises(Study.DoesNotExist):
        service.refit_study(study_id=987654)


def test_face_learns_from_curated_groups_and_a_group_edit_is_new_data(db, media_root):
    from annotation.groups.services import group_create

    rng = np.random.default_rng(3)
    centres = np.zeros((12, 6))
    centres[:, :2] = rng.normal(size=(12, 2))
    members = np.repeat(centres, 5, axis=0)
    members[:, 2:] += rng.normal(size=(60, 4))  # within a group, only the sensitive dims vary
    space, items = space_create(media_root, matrix=members, name="grouped")
    study, users = study_create(space, name="groups study")
    StudyLearningSettings.objects.create(study=study, face_components=4, fit_explore=False)
    for g in range(11):
        group_create(
            study=study,
            user=users[0],
            name=f"group {g}",
            member_ids=[items[r].pk for r in range(5 * g, 5 * g + 5)],
        )
    service.refit_study(study_id=study.pk)
    face = MetricVersion.objects.get(study=study, method="face")
    assert face.status == "ready"
    assert face.counts["groups"] == 11
    assert face.group_watermark == snapshots.study_data_marks(study_id=study.pk).group_watermark
    truth = np.diag([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert np.linalg.norm(sigma_of(face) - truth, 2) < 1e-6
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"

    group_create(
        study=study, user=users[0], name="group 11", member_ids=[items[r].pk for r in range(55, 60)]
    )
    assert study.pk in snapshots.study_ids_with_newer_data()
    service.refit_study(study_id=study.pk)
    latest = versions(study, method="face")[-1]
    assert latest.counts["groups"] == 12
    assert latest.group_watermark > face.group_watermark
    assert latest.parent_id == face.pk


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


def test_a_few_new_answers_wait_for_the_churn_threshold_or_the_time_limit(world):
    _, _, study, _ = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers, learning.version_min_minutes = 10, 5
    learning.save()
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    first = {v.method: v.pk for v in versions(study)}
    assert sorted(first) == ["explore", "face"]

    add_simulated(world, 4, seed=2)  # 4 < 10 new answers, 0 < 5 minutes
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "waiting"
    assert report.ready == []
    assert any("explore: 4 new answers since version" in reason for reason in report.waiting)
    assert len(versions(study)) == 2
    assert study.refit_state.last_outcome.startswith("waiting: ")
    # The sweep keeps the study due, so the answers are fitted once the wait is over.
    assert study.pk in snapshots.study_ids_with_newer_data()

    add_simulated(world, 6, seed=3)  # 10 new answers: worth a version
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert len(versions(study, method="explore")) == 2

    add_simulated(world, 1, seed=4)
    assert service.refit_study(study_id=study.pk).outcome == "waiting"
    MetricVersion.objects.filter(study=study).update(
        created_at=timezone.now() - timedelta(minutes=6)
    )  # the time limit passed: one new answer is enough
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert len(versions(study, method="explore")) == 3


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


def test_changed_settings_refit_at_once_whatever_the_churn_threshold(world):
    _, _, study, _ = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers, learning.version_min_minutes = 1000, 600
    learning.face_components = 2
    learning.save()
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "fitted"
    assert [v.parameters["n_components"] for v in versions(study, method="face")] == [4, 2]
    assert len(versions(study, method="explore")) == 1  # its settings did not change


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


def test_face_k_not_below_the_dimension_fails_readably_instead_of_rounding_noise(world):
    _, _, study, _ = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.face_components = 6  # = d
    learning.save()
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    (face,) = versions(study, method="face")
    assert face.status == "failed"
    assert "must be smaller than the space's dimension 6" in face.error
    assert versions(study, method="explore")[0].status == "ready"
