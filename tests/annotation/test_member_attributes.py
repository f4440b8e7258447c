"""Member attributes (cohorts, issue 37): defined by a study's admins, values given over the
API (``POST`` a member, ``PATCH`` a member) and the members page, a one-time question on the
first visit; admins only, bad values refused with the reason, nothing written."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import MemberAttribute, Membership
from annotation.setup.cohorts import services as cohorts
from common.errors import InvalidInput, NotAllowed

from .factories import PASSWORD, make_space, make_study, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(media_root):
    return make_study(space=make_space(name="words"))


@pytest.fixture
def admin(study):
    return make_user("boss", study=study, role="admin")


def client_of(user) -> APIClient:
    _, key = api_token_create(user=user, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def test_an_attribute_is_defined_and_members_get_values_over_the_api(study, admin):
    api = client_of(admin)
    url = reverse("api-study-member-attributes", args=[study.pk])
    made = api.post(url, {"name": "region", "values": ["EU", "US"]}, format="json")
    assert made.status_code == 201, made.content
    assert api.get(url).json() == [{"name": "region", "values": ["EU", "US"], "ask": False}]
    make_user("ann")
    added = api.post(
        reverse("api-study-members", args=[study.pk]),
        {"user": "ann", "attributes": {"region": "EU"}},
        format="json",
    )
    assert added.status_code == 201, added.content
    assert added.json()["attributes"] == {"region": "EU"}
    member = Membership.objects.get(study=study, user__username="ann")
    changed = api.patch(
        reverse("api-study-member", args=[study.pk, member.pk]),
        {"attributes": {"region": "US"}},
        format="json",
    )
    assert changed.status_code == 200
    assert changed.json()["attributes"] == {"region": "US"}
    member.refresh_from_db()
    assert member.attributes == {"region": "US"}


def test_a_value_outside_the_attribute_is_refused_and_nothing_is_written(study, admin):
    cohorts.attribute_define(user=admin, study=study, name="region", values="EU, US")
    make_user("ann")
    api = client_of(admin)
    refused = api.post(
        reverse("api-study-members", args=[study.pk]),
        {"user": "ann", "attributes": {"region": "Mars"}},
        format="json",
    )
    assert refused.status_code == 400
    assert "one of EU, US" in refused.json()["detail"]
    assert not Membership.objects.filter(study=study, user__username="ann").exists()
    unknown = api.post(
        reverse("api-study-members", args=[study.pk]),
        {"user": "ann", "attributes": {"age": "30"}},
        format="json",
    )
    assert unknown.status_code == 400


def test_only_admins_set_or_read_attributes(study, admin):
    cohorts.attribute_define(user=admin, study=study, name="region", values=["EU", "US"])
    annotator = make_user("ann", study=study, role="annotator")
    member = Membership.objects.get(user=annotator)
    api = client_of(annotator)
    patched = api.patch(
        reverse("api-study-member", args=[study.pk, member.pk]),
        {"attributes": {"region": "EU"}},
        format="json",
    )
    assert patched.status_code == 403
    assert api.get(reverse("api-study-member-attributes", args=[study.pk])).status_code == 403
    with pytest.raises(NotAllowed):
        cohorts.member_attributes_set(user=annotator, membership=member, attributes={})


def test_an_attribute_needs_two_values_and_changing_them_drops_values_no_longer_allowed(
    study, admin
):
    with pytest.raises(InvalidInput):
        cohorts.attribute_define(user=admin, study=study, name="region", values=["EU"])
    cohorts.attribute_define(user=admin, study=study, name="region", values=["EU", "US"])
    member = Membership.objects.get(user=admin)
    cohorts.member_attributes_set(user=admin, membership=member, attributes={"region": "US"})
    cohorts.attribute_define(user=admin, study=study, name="region", values=["EU", "Asia"])
    member.refresh_from_db()
    assert member.attributes == {}
    assert MemberAttribute.objects.get(study=study).values == ["EU", "Asia"]


def test_the_members_page_defines_an_attribute_and_gives_a_value(client, study, admin):
    annotator = make_user("ann", study=study, role="annotator")
    client.login(username="boss", password=PASSWORD)
    client.post(
        reverse("annotation:study-member-attribute", args=[study.pk]),
        {"name": "region", "values": "EU, US"},
    )
    attribute = MemberAttribute.objects.get(study=study)
    member = Membership.objects.get(user=annotator)
    client.post(
        reverse("annotation:study-member-attributes", args=[study.pk, member.pk]),
        {f"attr-{attribute.pk}": "US"},
    )
    member.refresh_from_db()
    assert member.attributes == {"region": "US"}
    page = client.get(reverse("annotation:study-members", args=[study.pk])).content.decode()
    assert "region: US" in page
    client.logout()
    client.login(username="ann", password=PASSWORD)  # no admin: no values of anyone
    assert client.get(reverse("annotation:study-members", args=[study.pk])).status_code in (
        403,
        404,
    )


def test_a_member_is_asked_once_on_the_first_visit(client, study, admin):
    cohorts.attribute_define(user=admin, study=study, name="region", values=["EU", "US"], ask=True)
    annotator = make_user("ann", study=study, role="annotator")
    client.login(username="ann", password=PASSWORD)
    label = reverse("annotation:label", args=[study.pk])
    first = client.get(label)
    assert first.status_code == 302
    assert first.url == reverse("annotation:study-about-you", args=[study.pk])
    attribute = MemberAttribute.objects.get(study=study)
    answered = client.post(first.url, {f"attr-{attribute.pk}": "EU"})
    assert answered.status_code == 302
    assert answered.url == label
    assert Membership.objects.get(user=annotator).attributes == {"region": "EU"}
    assert client.get(label).status_code == 200
    with pytest.raises(InvalidInput):  # answered once: not changed by the member
        cohorts.own_attributes_answer(user=annotator, study=study, answers={"region": "US"})


def test_a_study_without_a_question_sends_nobody_to_it(client, study, admin):
    cohorts.attribute_define(user=admin, study=study, name="region", values=["EU", "US"])
    make_user("ann", study=study, role="annotator")
    client.login(username="ann", password=PASSWORD)
    assert client.get(reverse("annotation:label", args=[study.pk])).status_code == 200
