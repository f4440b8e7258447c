"""The cohort page (issue 37): the study's admins see each attribute, what it still needs and,
once compared, the cohorts' versions and figures; asking about pairs before a comparison says
why nothing was sent; annotators and reviewers are refused."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import CandidatePair, MemberAttribute, Membership
from learning.cohorts.service import cohort_refit
from learning.refits.service import refit_study
from tests.annotation.factories import PASSWORD

from .world import cohort_study, record_space

pytestmark = pytest.mark.django_db


def admin_of(study):
    member = Membership.objects.filter(study=study).order_by("id").first()
    member.role = "admin"
    member.save()
    member.user.set_password(PASSWORD)
    member.user.save()
    return member.user


def test_asking_before_a_comparison_says_why(client, media_root):
    study = cohort_study(*record_space(rows=60), name="early", per=5)
    admin = admin_of(study)
    client.login(username=admin.username, password=PASSWORD)
    url = reverse("learning:study-cohorts", args=[study.pk])
    page = client.get(url).content.decode()
    assert "Not compared yet" in page
    answer = client.post(url, {"action": "ask", "attribute": "group"}, follow=True)
    assert "No pairs to ask about yet" in answer.content.decode()
    assert not CandidatePair.objects.filter(study=study).exists()


def test_the_page_shows_the_comparison_and_sends_the_pairs_back(client, media_root):
    study = cohort_study(*record_space(), name="shown")
    refit_study(study_id=study.pk)
    cohort_refit(study_id=study.pk)
    admin = admin_of(study)
    client.login(username=admin.username, password=PASSWORD)
    url = reverse("learning:study-cohorts", args=[study.pk])
    page = client.get(url).content.decode()
    assert "Permutation test of the cohort labels over 8 annotators" in page
    assert "explore group: cohorts equal" in page
    client.post(url, {"action": "ask", "attribute": "group"})
    assert CandidatePair.objects.filter(study=study).count() == 10
    reviewer = Membership.objects.filter(study=study, role="annotator").last()
    reviewer.role = "reviewer"
    reviewer.save()
    reviewer.user.set_password(PASSWORD)
    reviewer.user.save()
    client.logout()
    client.login(username=reviewer.user.username, password=PASSWORD)
    assert client.get(url).status_code == 403
    assert MemberAttribute.objects.filter(study=study).count() == 1
