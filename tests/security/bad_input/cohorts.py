"""Bad inputs of member attributes and cohorts (issue 37): the set-up API's attributes, the
members page's forms, the one-time question, the cohort page."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import Membership

from .cases import A, Bad


def _ann_a_member(world) -> int:
    return Membership.objects.get(study=world.study_a, user=world.users["ann_a"]).pk


CASES: list[Bad] = [
    Bad(
        "api-study-member-attributes",
        "an attribute with one value",
        "post",
        lambda w: reverse("api-study-member-attributes", args=[A(w)]),
        400,
        "at least 2",
        {"name": "region", "values": ["EU"]},
        role="adm_a",
    ),
    Bad(
        "api-study-member",
        "a value of an attribute the study does not have",
        "patch",
        lambda w: reverse("api-study-member", args=[A(w), _ann_a_member(w)]),
        400,
        "no member attribute",
        {"attributes": {"planet": "Mars"}},
        role="adm_a",
    ),
]

MEMBERS = "tests.annotation.test_member_attributes::"
# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "annotation:study-member-attribute",
        "an attribute with one value (refused, nothing written)",
        MEMBERS
        + "test_an_attribute_needs_two_values_and_changing_them_drops_values_no_longer_allowed",
    ),
    (
        "annotation:study-member-attributes",
        "a value outside the attribute",
        MEMBERS + "test_a_value_outside_the_attribute_is_refused_and_nothing_is_written",
    ),
    (
        "annotation:study-about-you",
        "an answer to a question already answered",
        MEMBERS + "test_a_member_is_asked_once_on_the_first_visit",
    ),
    (
        "learning:study-cohorts",
        "pairs asked for before any comparison (the page's message, nothing written)",
        "tests.learning.cohorts.test_cohort_page::test_asking_before_a_comparison_says_why",
    ),
]

NO_INPUT = {"api-cohorts"}  # a read of the study's cohorts
