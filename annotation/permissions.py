"""Who may do what in a study.

* staff and superusers are admins of every study;
* members have the role of their membership: annotators see their studies and only their own
  answers and groups; reviewers and admins see everything in their studies;
* everybody else sees nothing of the study.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from .exceptions import NotAllowed
from .models import Membership, Study

Role = Membership.Role
SEES_ALL = {Role.REVIEWER, Role.ADMIN}


def study_role(user, study: Study) -> str | None:
    """The user's role in the study (a ``Membership.Role`` value), or None for outsiders."""
    if not user or not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return Role.ADMIN
    cache = getattr(user, "_study_roles", None)
    if cache is None:
        cache = user._study_roles = {}
    if study.pk not in cache:
        cache[study.pk] = (
            Membership.objects.filter(user=user, study=study).values_list("role", flat=True).first()
        )
    return cache[study.pk]


def can_see_all(user, study: Study) -> bool:
    """Reviewers and admins see every answer and group of the study."""
    return study_role(user, study) in SEES_ALL


def require_member(user, study: Study) -> str:
    role = study_role(user, study)
    if role is None:
        raise NotAllowed("You are not a member of this study.")
    return role


def require_reviewer(user, study: Study) -> str:
    role = require_member(user, study)
    if role not in SEES_ALL:
        raise NotAllowed("Only reviewers and admins of this study can see this.")
    return role


def can_edit_group(user, group) -> bool:
    """The group's creator, or a reviewer/admin of its study."""
    if group.created_by_id is not None and group.created_by_id == user.pk:
        return study_role(user, group.study) is not None
    return can_see_all(user, group.study)


class IsStudyMember(BasePermission):
    """DRF object permission: the object is a study the user belongs to."""

    message = "You are not a member of this study."

    def has_object_permission(self, request, view, obj) -> bool:
        return study_role(request.user, obj) is not None
