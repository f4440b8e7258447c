"""The study's learning settings page: study admins set the churn rule, the quiet window, the
drift alarm rate and FACE's k in the browser; a change is audited and queues a refit; the page
explains each setting; the dashboard says when the next version is due."""

from __future__ import annotations

from django.urls import reverse

from audit.models import AuditEvent
from learning.models import RefitState, StudyLearningSettings


def test_an_admin_reads_the_defaults_with_help_and_nothing_is_written(client, users, study):
    client.force_login(users["admin"])
    detail = client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    url = reverse("learning:study-learning-settings", args=[study.pk])
    assert url in detail  # reachable from the study page
    page = client.get(url).content.decode()
    assert 'name="version_min_new_answers" value="10"' in page
    assert 'name="debounce_seconds" value="3"' in page
    assert 'name="drift_alarm_rate" value="0.05"' in page
    assert "once the study is quiet, what has arrived gets a version" in page
    assert "is flagged at all, over all its versions together" in page.replace("\n", " ")
    assert "share of versions flagged by chance" not in page
    assert not StudyLearningSettings.objects.filter(study=study).exists()


def test_a_reviewer_neither_sees_the_link_nor_the_page(client, users, study):
    client.force_login(users["reviewer"])
    url = reverse("learning:study-learning-settings", args=[study.pk])
    assert (
        url not in client.get(reverse("annotation:study-detail", args=[study.pk])).content.decode()
    )
    assert client.get(url).status_code == 403


def test_saving_stores_audits_and_queues_a_refit(
    client, users, study, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    url = reverse("learning:study-learning-settings", args=[study.pk])
    body = {
        "version_min_new_answers": "25",
        "version_min_minutes": "2",
        "debounce_seconds": "5",
        "drift_alarm_rate": "0.01",
        "face_components": "",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, body)
    assert response.status_code == 302
    learning = StudyLearningSettings.objects.get(study=study)
    assert (learning.version_min_new_answers, learning.version_min_minutes) == (25, 2)
    assert (learning.debounce_seconds, learning.drift_alarm_rate) == (5, 0.01)
    assert learning.face_components is None
    event = AuditEvent.objects.get(study_id=study.pk, action="study.change")
    assert event.detail["learning"]["version_min_new_answers"] == [10, 25]
    assert RefitState.objects.get(study=study).due_at is not None  # a refit is queued

    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, body)  # the same again: nothing changed, nothing audited
    assert AuditEvent.objects.filter(study_id=study.pk, action="study.change").count() == 1


def test_bad_values_are_form_errors_and_nothing_is_written(client, users, study):
    client.force_login(users["admin"])
    url = reverse("learning:study-learning-settings", args=[study.pk])
    response = client.post(
        url,
        {
            "version_min_new_answers": "0",
            "version_min_minutes": "5",
            "debounce_seconds": "61",
            "drift_alarm_rate": "0",
            "face_components": str(study.space.dimension),
        },
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "At least 1 new answer." in page
    assert "less than or equal to 60" in page
    assert "greater than or equal to 1e-06" in page
    assert "FACE&#x27;s k must lie between 1 and" in page
    assert not StudyLearningSettings.objects.filter(study=study).exists()
