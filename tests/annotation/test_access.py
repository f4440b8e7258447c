"""The one access rule (annotation.access): role × action, 404 for outsiders, 403 for members."""

from __future__ import annotations

import pytest

from annotation.access import Action, may, may_export, require, study_get, study_role
from annotation.models import Membership
from common.errors import NotAllowed, NotFound

from .factories import make_user

Role = Membership.Role

# who → (VIEW, REVIEW, MANAGE)
TABLE = {
    "annotator": (True, False, False),
    "reviewer": (True, True, False),
    "study_admin": (True, True, True),
    "staff": (True, True, True),
    "outsider": (False, False, False),
}


@pytest.mark.parametrize("who", sorted(TABLE))
def test_role_and_action_table(request, study, who):
    user = request.getfixturevalue(who)
    allowed = dict(zip([Action.VIEW, Action.REVIEW, Action.MANAGE], TABLE[who], strict=True))
    for action, expected in allowed.items():
        assert may(user, study, action) is expected, (who, action)
        assert may(user, study.pk, action) is expected, (who, action, "by id")


def test_outsiders_get_not_found_members_get_not_allowed_with_the_reason(
    study, outsider, annotator
):
    with pytest.raises(NotFound, match="No such study"):
        require(outsider, study, Action.VIEW)
    with pytest.raises(NotAllowed, match="Only reviewers and admins"):
        require(annotator, study, Action.REVIEW)
    with pytest.raises(NotAllowed, match="publish"):
        require(annotator, study, Action.MANAGE, "Only admins publish.")
    assert require(annotator, study, Action.VIEW) == Role.ANNOTATOR


def test_an_unknown_study_is_the_same_not_found(staff):
    with pytest.raises(NotFound, match="No such study"):
        study_get(staff, 999_999, Action.VIEW)


def test_anonymous_and_inactive_users_have_no_role(study, django_user_model):
    from django.contrib.auth.models import AnonymousUser

    assert study_role(AnonymousUser(), study) is None
    ghost = make_user("ghost", is_staff=True)
    ghost.is_active = False
    assert study_role(ghost, study) is None


def test_the_role_is_read_once_per_request_user(study, annotator, django_assert_num_queries):
    with django_assert_num_queries(1):
        for _ in range(3):
            assert study_role(annotator, study) == Role.ANNOTATOR


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("annotator", False),
        ("reviewer", True),
        ("study_admin", True),
        ("staff", True),
        ("outsider", False),
    ],
)
def test_may_export_means_reviewer_or_admin_of_some_study_or_staff(request, who, expected):
    """The API-token rule: tokens are offered only to those whose tokens can export."""
    assert may_export(request.getfixturevalue(who)) is expected


def test_may_export_holds_for_an_annotator_who_reviews_another_study(annotator, space):
    from annotation.models import Study

    other = Study.objects.create(name="Other", space=space)
    Membership.objects.create(user=annotator, study=other, role=Role.REVIEWER)
    assert may_export(annotator) is True
