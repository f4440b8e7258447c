"""Cohorts through the app (issue 37): a pooled refit, then the worker's cohort fits — each
cohort's version and the equal-cohort one, marked with their cohort and judged like any
version, never the study's latest or current pooled metric; the report and the API; publishing
the equal-cohort metric with its make-up in the metadata; and nothing changes for a study
without attributes."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import Membership
from learning.cohorts.service import cohort_refit, cohorts_wanted
from learning.models import CohortReport, MetricVersion
from learning.refits.service import refit_study
from learning.refits.snapshots import study_ids_with_newer_data
from learning.versions import selectors
from learning.versions.publishing import version_publish

from .world import cohort_study, record_space

pytestmark = pytest.mark.django_db
EXPLORE = MetricVersion.Method.EXPLORE


@pytest.fixture
def space_fields(media_root):
    return record_space()


def test_each_cohort_gets_a_version_and_the_comparison_is_stored(space_fields):
    study = cohort_study(*space_fields, name="two")
    refit_study(study_id=study.pk)
    pooled = selectors.version_latest_ready(study_id=study.pk, method=EXPLORE)
    outcome = cohort_refit(study_id=study.pk)
    assert outcome.outcome == "fitted"
    assert len(outcome.reports) == 1
    cohorts = MetricVersion.objects.filter(study=study).exclude(cohort="")
    assert sorted(cohorts.values_list("cohort", flat=True)) == [
        "group:equal",
        "group=A",
        "group=B",
    ]
    for version in cohorts:
        assert version.status == "ready"
        assert version.verdict
        assert version.parent_id == pooled.pk
        assert version.counts["judgments_total"] == pooled.counts["judgments_total"] == 320
        make_up = version.parameters["cohort"]["cohorts"]
        assert [(c["value"], c["members"], c["answers"]) for c in make_up] == [
            ("A", 4, 160),
            ("B", 4, 160),
        ]
    # The pooled metric stays the study's latest and current one.
    assert selectors.version_latest_ready(study_id=study.pk, method=EXPLORE) == pooled
    current = selectors.version_current(study_id=study.pk)
    assert current is None or current.cohort == ""
    figures = CohortReport.objects.get(study=study).figures
    assert figures["status"] == "ready"
    assert 0 < figures["differ"]["p_value"] <= 1
    assert {f["field"] for f in figures["differ"]["fields"]} == {
        "age",
        "income",
        "hours",
        "sector",
    }
    metrics = {row["metric"] for row in figures["cross"]}
    assert metrics == {"A", "B", "equal", "pooled"}
    assert {row["on"] for row in figures["equal_vs_pooled"]} == {"A", "B"}
    assert figures["pairs"]
    assert figures["pairs"][0]["key_a"].startswith("p")
    # Done once: the same pooled version and values are not fitted again.
    assert cohort_refit(study_id=study.pk).outcome == "nothing to do"
    # The cohorts' versions do not make the study look stale to the sweep.
    assert study.pk not in study_ids_with_newer_data()


def test_the_api_and_publishing_the_equal_cohort_metric_with_its_make_up(space_fields):
    study = cohort_study(*space_fields, name="api")
    refit_study(study_id=study.pk)
    cohort_refit(study_id=study.pk)
    admin = Membership.objects.filter(study=study).first()
    admin.role = "admin"
    admin.save()
    _, key = api_token_create(user=admin.user, name="ci")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    body = api.get(reverse("api-cohorts", args=[study.pk])).json()
    (group,) = body["attributes"]
    assert group["name"] == "group"
    assert [(v["value"], v["members"], v["answers"]) for v in group["values"]] == [
        ("A", 4, 160),
        ("B", 4, 160),
    ]
    assert all(v["version"] for v in group["values"])
    assert set(group["differ"]) >= {"p_value", "fields"}
    equal = MetricVersion.objects.get(pk=group["equal_version"])
    version_publish(version_id=equal.pk, user=admin.user, reason="the cohorts count equally")
    equal.refresh_from_db()
    assert equal.is_published
    meta = api.get(reverse("api-version", args=[equal.pk])).json()
    assert meta["cohort"]["value"] == "equal"
    assert meta["cohort"]["attribute"] == "group"
    assert [c["answers"] for c in meta["cohort"]["cohorts"]] == [160, 160]
    sigma = api.get(reverse("api-version-sigma", args=[equal.pk, "npy"]))
    assert sigma.status_code == 200
    # An annotator may not read the cohorts.
    annotator = Membership.objects.filter(study=study, role="annotator").first()
    _, other = api_token_create(user=annotator.user, name="ci")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {other}")
    assert api.get(reverse("api-cohorts", args=[study.pk])).status_code == 403


def test_a_study_without_attributes_gets_the_same_versions_and_nothing_else(space_fields):
    plain = cohort_study(*space_fields, name="plain", attribute=False)
    twin = cohort_study(*space_fields, name="twin!")  # the same answers (seeded by name length)
    for study in (plain, twin):
        refit_study(study_id=study.pk)
    assert not cohorts_wanted(plain.pk)
    assert cohorts_wanted(twin.pk)
    assert cohort_refit(study_id=plain.pk).outcome == "nothing to do"
    cohort_refit(study_id=twin.pk)

    def pooled(study):
        return [
            (v.method, v.label, v.fingerprint, v.sigma_sha256, v.verdict)
            for v in MetricVersion.objects.filter(study=study, cohort="").order_by("id")
        ]

    assert pooled(plain) == pooled(twin)
    assert not MetricVersion.objects.filter(study=plain).exclude(cohort="").exists()
    assert not CohortReport.objects.filter(study=plain).exists()


def test_a_cohort_with_too_few_answers_waits(space_fields):
    study = cohort_study(*space_fields, name="few", annotators=(4, 1), per=40)
    refit_study(study_id=study.pk)
    cohort_refit(study_id=study.pk)
    figures = CohortReport.objects.get(study=study).figures
    assert figures["status"] == "waiting"
    assert "100 answers" in figures["needs"]
    assert not MetricVersion.objects.filter(study=study).exclude(cohort="").exists()
