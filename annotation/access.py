"""Who may do what in a study: the one rule, used by the pages, the API and the services.

Roles (``Membership.Role``): annotators label and curate and see only their own answers and
groups; reviewers also see everything in the study (answers, dashboards, metrics, exports);
admins also manage it (publish a metric version). Staff and superusers are admins of every
study. Everybody else has no role.

403 or 404: someone with no role in a study gets :class:`~common.errors.NotFound` — the study
stays hidden, as if it did not exist; a member whose role does not allow the action gets
:class:`~common.errors.NotAllowed` (403) with the reason.

Spaces: who may attach a space to a study and read its items (:func:`usable_spaces`,
:func:`require_space_use`, :func:`require_space_reader`) — spaces' own half of the rule is
``spaces.sharing``.
"""

from __future__ import annotations

from enum import StrEnum

from rest_framework.permissions import BasePermission

from accounts.tokens import token_scope
from common.access import is_staff
from common.errors import NotAllowed, NotFound
from spaces.models import EmbeddingSpace
from spaces.sharing import spaces_for

from .facts import member_role, study_facts
from .models import Membership, Study

Role = Membership.Role


class Action(StrEnum):
    VIEW = "view"  # see the study, label pairs, curate groups, read one's own answers
    REVIEW = "review"  # see every answer and group, dashboards, metrics; export
    MANAGE = "manage"  # publish metric versions


ALLOWED: dict[Action, frozenset[str]] = {
    Action.VIEW: frozenset({Role.ANNOTATOR, Role.REVIEWER, Role.ADMIN}),
    Action.REVIEW: frozenset({Role.REVIEWER, Role.ADMIN}),
    Action.MANAGE: frozenset({Role.ADMIN}),
}
REFUSED: dict[Action, str] = {
    Action.VIEW: "You are not a member of this study.",
    Action.REVIEW: "Only reviewers and admins of this study can see this.",
    Action.MANAGE: "Only an admin of the study can do this.",
}
SEES_ALL = ALLOWED[Action.REVIEW]


def study_role(user, study: Study | int) -> str | None:
    """The user's role in the study (a ``Membership.Role`` value), or None for outsiders.

    Memoised on the user object for the request, and across requests in the cache
    (``annotation.facts.member_role``, forgotten when the membership changes).

    A request made with an API token limited to studies (``accounts.tokens.token_scope``) has
    no role outside them, staff included.
    """
    if user is None or not user.is_authenticated:
        return None
    study_id = study if isinstance(study, int) else study.pk
    scope = token_scope(user)
    if scope is not None and study_id not in scope:
        return None
    if is_staff(user):
        return Role.ADMIN
    cache = user.__dict__.setdefault("_study_roles", {})
    if study_id not in cache:
        cache[study_id] = member_role(study_id, user.pk)
    return cache[study_id]


def may(user, study: Study | int, action: Action) -> bool:
    """May ``user`` do ``action`` in ``study``?"""
    return study_role(user, study) in ALLOWED[action]


def may_export(user) -> bool:
    """May ``user`` export anything: staff, or a reviewer or admin of some study.

    The API-token page offers tokens only to them: anyone else's token could only ever be
    answered 403. Memoised on the user object for the request.
    """
    if user is None or not user.is_authenticated:
        return False
    if is_staff(user):
        return True
    if "_may_export" not in user.__dict__:
        user.__dict__["_may_export"] = Membership.objects.filter(
            user=user, role__in=ALLOWED[Action.REVIEW]
        ).exists()
    return user.__dict__["_may_export"]


def token_studies(user) -> list[tuple[int, str]]:
    """The studies (id, name) a token of ``user`` may be limited to: those they may open, and
    for staff every study that is not archived."""
    qs = Study.objects.filter(archived_at__isnull=True)
    if not is_staff(user):
        qs = qs.filter(memberships__user=user)
    return list(qs.order_by("name", "pk").values_list("pk", "name"))


def require_unscoped(user, message: str) -> None:
    """NotAllowed for a request whose token is limited to studies (what reaches past them)."""
    if token_scope(user) is not None:
        raise NotAllowed(message)


def require(user, study: Study | int, action: Action, message: str | None = None) -> str:
    """The user's role if it allows ``action``; else NotFound (outsiders) or NotAllowed."""
    role = study_role(user, study)
    if role is None:
        raise NotFound("No such study.")
    if role not in ALLOWED[action]:
        raise NotAllowed(message or REFUSED[action])
    return role


def study_get(
    user, study_id, action: Action, *, queryset=None, message=None, cached: bool = False
) -> Study:
    """The study ``study_id`` if ``user`` may do ``action`` in it (see :func:`require`).

    ``cached``: the read-only copy of ``annotation.facts`` (the answer path; never save it)."""
    if cached and queryset is None:
        facts = study_facts(int(study_id))
        study = facts.study if facts is not None else None
    else:
        queryset = Study.objects.select_related("space") if queryset is None else queryset
        study = queryset.filter(pk=study_id).first()
    if study is None:
        raise NotFound("No such study.")
    require(user, study, action, message)
    return study


def is_study_admin(user) -> bool:
    """Whether ``user`` is an admin (the role) of some study; memoised for the request."""
    if user is None or not user.is_authenticated:
        return False
    if "_is_study_admin" not in user.__dict__:
        user.__dict__["_is_study_admin"] = Membership.objects.filter(
            user=user, role=Role.ADMIN
        ).exists()
    return user.__dict__["_is_study_admin"]


def usable_spaces(user):
    """The spaces ``user`` may attach to a study they administer and read the items of: every
    space for staff; else the spaces they own or that are shared with them, and — for an admin
    of some study — those shared with every study admin (``spaces.sharing``)."""
    return spaces_for(user, study_admin=not is_staff(user) and is_study_admin(user))


def may_use_space(user, space: EmbeddingSpace | int) -> bool:
    space_id = space if isinstance(space, int) else space.pk
    return usable_spaces(user).filter(pk=space_id).exists()


def require_space_use(user, space: EmbeddingSpace, *, study: Study | None = None) -> None:
    """NotAllowed unless ``user`` may put ``space`` on a study: a space they may use, or the
    space ``study`` is on already (its admins keep it when they change other settings)."""
    if study is not None and study.pk and study.space_id == space.pk:
        return
    if not may_use_space(user, space):
        raise NotAllowed(f"The embedding space {space.name!r} is not shared with you.")


def require_space_reader(user, space_id: int) -> None:
    """Who may read a space's items: staff, members of a study on the space (item reads follow
    the study's space), and whoever may use the space; others get NotFound."""
    if not EmbeddingSpace.objects.filter(pk=space_id).exists():
        raise NotFound("No such embedding space.")
    scope = token_scope(user)
    if scope is not None:  # a limited token reads the spaces of its studies only
        studies = Study.objects.filter(pk__in=scope, space_id=space_id).values_list("pk", flat=True)
        if not any(study_role(user, pk) for pk in studies):
            raise NotFound("No such embedding space.")
        return
    if is_staff(user) or may_use_space(user, space_id):
        return
    if not Membership.objects.filter(user=user, study__space_id=space_id).exists():
        raise NotFound("No such embedding space.")


def can_edit_group(user, group) -> bool:
    """The group's creator (while a member), or a reviewer/admin of its study."""
    if group.created_by_id is not None and group.created_by_id == user.pk:
        return study_role(user, group.study_id) is not None
    return may(user, group.study_id, Action.REVIEW)


class StudyAccess(BasePermission):
    """DRF: the view's ``study_action`` (default VIEW) in the study of the URL's ``study_id``.

    The study is left on ``view.study`` (the cached read-only copy when ``view.study_cached``);
    ``view.study_refused`` may word the 403. Anonymous
    requests get DRF's 401.
    """

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        study_id = view.kwargs.get("study_id")
        if study_id is not None:
            action = getattr(view, "study_action", Action.VIEW)
            view.study = study_get(
                request.user,
                study_id,
                action,
                message=getattr(view, "study_refused", None),
                cached=getattr(view, "study_cached", False),
            )
        return True
