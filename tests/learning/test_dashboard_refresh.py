"""The study dashboard's figures come from the worker through the shared cache: a big study's
page never computes them; a refresh stores them under the data watermark; stale figures are
shown with a notice; the JSON status the "computing…" page polls."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Label, PairJudgment
from fairmetric_site.celery import app
from learning import tasks
from learning.dashboards import figures, refresh

from . import test_dashboards as base

# The hand-computed case of the figures' tests (six pairs, three annotators, 18 answers).
items, three_annotators, tiny_case = base.items, base.three_annotators, base.tiny_case

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch) -> list:
    """Messages sent to the broker (recorded at the client's edge, not delivered)."""
    messages: list = []
    monkeypatch.setattr(
        app, "send_task", lambda name, **options: messages.append((name, options["kwargs"]))
    )
    return messages


@pytest.fixture
def computations(monkeypatch) -> list:
    """Every computation of dashboard figures (the real one runs; this records it)."""
    calls: list = []
    real = figures._compute

    def recording(study):
        calls.append(study.pk)
        return real(study)

    monkeypatch.setattr(figures, "_compute", recording)
    return calls


@pytest.fixture
def big(settings):
    """Every study counts as big: no inline computation on a cache miss."""
    settings.DASHBOARD_INLINE_MAX_JUDGMENTS = 1


def test_cold_cache_big_study_renders_the_shell_and_queues_one_refresh(
    client, study, users, tiny_case, big, sent, computations, django_assert_max_num_queries
):
    client.force_login(users["reviewer"])
    url = reverse("learning:study-dashboard", args=[study.pk])
    with django_assert_max_num_queries(12):
        response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200
    assert "Computing… (this study has 18 answers)" in page
    assert reverse("learning:study-dashboard-status", args=[study.pk]) in page
    assert "Krippendorff" not in page
    assert computations == []
    assert sent == [("learning.dashboard_refresh", {"study_id": study.pk})]
    client.get(url)  # within DASHBOARD_REFRESH_SECONDS: no second message
    assert len(sent) == 1
    assert computations == []


def test_refresh_stores_figures_under_the_watermark_and_is_idempotent(
    client, study, users, tiny_case, big, sent, computations
):
    seconds = tasks.dashboard_refresh(study.pk)  # the task body, as the worker runs it
    assert seconds is not None
    assert seconds >= 0
    marks = figures.data_watermark(study)
    stored = refresh.cached_figures(study.pk, marks)
    assert stored.total == 18
    assert stored.alpha == pytest.approx(17 / 31)
    assert tasks.dashboard_refresh(study.pk) is None  # same watermark: nothing to do
    assert computations == [study.pk]
    client.force_login(users["reviewer"])
    response = client.get(reverse("learning:study-dashboard", args=[study.pk]))
    page = response.content.decode()
    assert "Krippendorff" in page
    assert "refreshing" not in page
    assert computations == [study.pk]
    assert sent == []
    assert tasks.dashboard_refresh(10**9) is None  # a deleted study: nothing, no error


def test_stale_figures_render_with_the_notice_and_queue_a_refresh(
    client, study, users, tiny_case, items, big, sent, computations
):
    refresh.dashboard_refresh(study_id=study.pk)
    PairJudgment.objects.create(
        study=study,
        annotator=tiny_case[2],
        item_a=items[6],
        item_b=items[7],
        label=Label.INCOMPARABLE,
    )
    client.force_login(users["reviewer"])
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    assert "refreshing…" in page
    assert '<span class="value">18</span><span class="muted">answers</span>' in page
    assert computations == [study.pk]  # only the refresh above, none in the request
    assert sent == [("learning.dashboard_refresh", {"study_id": study.pk})]
    refresh.dashboard_refresh(study_id=study.pk)  # what the worker then does
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    assert '<span class="value">19</span><span class="muted">answers</span>' in page
    assert "refreshing" not in page


def test_small_study_is_computed_inline_once(client, study, users, tiny_case, sent, computations):
    client.force_login(users["reviewer"])
    url = reverse("learning:study-dashboard", args=[study.pk])
    assert "Krippendorff" in client.get(url).content.decode()
    assert "Krippendorff" in client.get(url).content.decode()
    assert computations == [study.pk]
    assert sent == []


def test_status_json_reports_readiness(client, study, users, tiny_case, big, sent):
    client.force_login(users["reviewer"])
    url = reverse("learning:study-dashboard-status", args=[study.pk])
    assert client.get(url).json() == {
        "ready": False,
        "fresh": False,
        "answers": 18,
        "computed_at": None,
    }
    refresh.dashboard_refresh(study_id=study.pk)
    status = client.get(url).json()
    assert status["ready"]
    assert status["fresh"]
    assert status["computed_at"]
    client.force_login(users["annotator"])
    assert client.get(url).status_code == 403


def test_a_finished_refit_queues_a_dashboard_refresh(study, sent):
    tasks.refit_study(study.pk)  # the task body, as the worker runs it
    assert ("learning.dashboard_refresh", {"study_id": study.pk}) in sent
