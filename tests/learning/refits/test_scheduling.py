"""learning.refits.service.refit_study: when a refit makes versions — nothing new does nothing,
new or deleted answers and changed settings do; a constant query count; an interrupted fit is
retired; a held lease waits; a few answers wait for the churn threshold or the time limit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Membership, PairJudgment
from annotation.review.services import adjudicate, adjudication_remove
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import scheduling, service, snapshots
from learning.versions import selectors

from .helpers import add_simulated, versions


def test_refit_without_new_data_does_nothing(world, django_assert_max_num_queries):
    _, _, study, _ = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    before = versions(study)
    # 15: one of them is the adjudications' mark (annotation/review/fit.py)
    with django_assert_max_num_queries(15):
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
    service.refit_study(study_id=study.pk)  # the versions the next two refits compare with
    later = get_user_model().objects.create_user("later")
    Membership.objects.create(user=later, study=study)
    add_simulated(world, 50, seed=2, annotator=later)
    with CaptureQueriesContext(connection) as small:
        service.refit_study(study_id=study.pk)
    add_simulated(world, 1500, seed=3, annotator=users[1])
    with CaptureQueriesContext(connection) as large:
        service.refit_study(study_id=study.pk)
    add_simulated(world, 1500, seed=4, annotator=users[0])
    with CaptureQueriesContext(connection) as larger:
        service.refit_study(study_id=study.pk)
    # A version judged informative (here: from the 1,750-answer refit on) does a fixed amount of
    # further work (its drift comparisons, the re-check of the current version): a constant,
    # not a growth with the answers; between two informative refits the count stays put.
    assert len(large.captured_queries) <= len(small.captured_queries) + 8
    assert len(larger.captured_queries) <= len(large.captured_queries) + 2


def test_a_deleted_answer_counts_as_new_data(world):
    _, _, study, _ = world
    created = add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    assert study.pk not in snapshots.study_ids_with_newer_data()
    PairJudgment.objects.filter(pk=created[10].pk).delete()
    assert study.pk in snapshots.study_ids_with_newer_data()
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert study.pk not in snapshots.study_ids_with_newer_data()


def test_the_sweep_refits_a_study_whose_newest_decision_is_newer_than_its_versions(world):
    """Issue #39, item 8: the sweep compared answers and groups only, so an adjudication made
    while its refit message was lost waited for the next answer."""
    _, _, study, users = world
    created = add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    assert study.pk not in snapshots.study_ids_with_newer_data()
    pair = created[0]
    reviewer = users[0]
    Membership.objects.filter(study=study, user=reviewer).update(role="reviewer")
    decision = adjudicate(
        study=study,
        user=reviewer,
        item_a_id=pair.item_a_id,
        item_b_id=pair.item_b_id,
        label="incomparable" if pair.label == "comparable" else "comparable",
    )
    assert study.pk in snapshots.study_ids_with_newer_data()
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert study.pk not in snapshots.study_ids_with_newer_data()
    adjudication_remove(
        study=study, user=reviewer, item_a_id=decision.item_a_id, item_b_id=decision.item_b_id
    )  # a decision taken back is new data too
    assert study.pk in snapshots.study_ids_with_newer_data()


def test_changed_settings_refit_the_same_data(world):
    _, _, study, _ = world
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    StudyLearningSettings.objects.filter(study=study).update(repeat_policy="drop_unsure")
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert len(versions(study, status="ready")) == 4


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


def _quiet_for(study, seconds: float) -> None:
    """As if the study's newest answer came ``seconds`` ago."""
    PairJudgment.objects.filter(study=study).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_during_a_burst_a_few_answers_wait_for_the_churn_threshold_or_the_time_limit(world):
    _, _, study, _ = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers, learning.version_min_minutes = 10, 5
    learning.debounce_seconds = 30  # the burst goes on for this test's whole length
    learning.save()
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    first = {v.method: v.pk for v in versions(study)}
    assert sorted(first) == ["explore", "face"]

    add_simulated(world, 4, seed=2)  # 4 < 10 new answers, 0 < 5 minutes, the burst goes on
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "waiting"
    assert report.ready == []
    assert 25 < report.retry_in <= 30  # until the study has been quiet for 30 s
    assert any("explore: 4 new answers since version" in reason for reason in report.waiting)
    assert any("or after 6 more answers" in reason for reason in report.waiting)
    assert len(versions(study)) == 2
    assert study.refit_state.last_outcome.startswith("waiting: ")
    # The waiting refit queued itself again for the moment the study turns quiet.
    study.refit_state.refresh_from_db()
    queued_in = (study.refit_state.due_at - timezone.now()).total_seconds()
    assert 25 < queued_in <= 30.5

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


def test_when_the_study_goes_quiet_what_has_arrived_gets_a_version_whatever_the_churn(world):
    _, _, study, _ = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers, learning.version_min_minutes = 1000, 600
    learning.debounce_seconds = 3
    learning.save()
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    add_simulated(world, 9, seed=2)  # the last 9 answers of a burst
    _quiet_for(study, 1)  # not yet quiet for 3 s
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "waiting"
    assert 0 < report.retry_in <= 2.0
    _quiet_for(study, 3.5)  # quiet: fitted, though 9 < 1000 and 0 < 600 minutes
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "fitted"
    top = snapshots.study_data_marks(study_id=study.pk).judgment_watermark
    assert {v.method for v in versions(study, judgment_watermark=top)} == {"explore", "face"}
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"


def test_the_quiet_time_is_the_newest_answer_plus_the_window(world):
    _, _, study, _ = world
    now = timezone.now()
    assert scheduling.study_quiet_in(study_id=study.pk, debounce=3, now=now) == 0.0  # no answers
    add_simulated(world, 5)
    _quiet_for(study, 1.0)
    assert scheduling.study_quiet_in(
        study_id=study.pk, debounce=3, now=timezone.now()
    ) == pytest.approx(2.0, abs=0.2)
    _quiet_for(study, 4.0)
    assert scheduling.study_quiet_in(study_id=study.pk, debounce=3, now=timezone.now()) == 0.0


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


def test_a_refit_of_a_deleted_study_says_so(db):
    from annotation.models import Study

    with pytest.raises(Study.DoesNotExist):
        service.refit_study(study_id=987654)


def test_the_dashboard_and_the_drift_page_say_when_the_next_version_is_due(world, client):
    from django.urls import reverse

    from .helpers import admin_of

    _, _, study, _ = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers, learning.debounce_seconds = 10, 30
    learning.save()
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    add_simulated(world, 4, seed=2)
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "waiting"
    client.force_login(admin_of(study))
    for name in ("learning:study-dashboard", "learning:study-drift"):
        page = client.get(reverse(name, args=[study.pk])).content.decode()
        assert "4 new answers since version" in page
        assert "UTC (quiet for 30 s), or after 6 more answers" in page
        assert 'data-testid="refit-queued">A refit is queued for' in page
