"""Who may use an embedding space: its owner, the people it is shared with, and — when it is
shared with all of them — every study admin. Staff may use every space.

"Use" means attach the space to a study one administers (the study settings form lists only
these spaces) and read its items (``/api/items/?space=``). Staff create spaces and own what they
upload; on the space's sharing page they give it to someone else, share it with named people or
with every study admin, or take it back. A space without an owner (one imported by a command,
or one whose owner was deleted) is for staff only until shared.

This module is spaces' half of the rule (the space's own fields); whether someone is a study
admin is annotation's to say: ``annotation.access.usable_spaces`` / ``require_space_use``
combine the two, and are the rule every page and API asks.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q, QuerySet

from audit.services import Action, audit_record
from common.access import is_staff
from spaces.exceptions import InputFileError
from spaces.models import EmbeddingSpace


def spaces_for(user, *, study_admin: bool) -> QuerySet[EmbeddingSpace]:
    """The spaces ``user`` may use; ``study_admin``: whether they administer some study."""
    spaces = EmbeddingSpace.objects.all()
    if user is None or not user.is_authenticated:
        return spaces.none()
    if is_staff(user):
        return spaces
    shared = EmbeddingSpace.shared_with.through.objects.filter(user_id=user.pk)
    rule = Q(owner_id=user.pk) | Q(pk__in=shared.values("embeddingspace_id"))
    if study_admin:
        rule |= Q(shared_with_study_admins=True)
    return spaces.filter(rule)


def users_named(names: str) -> list:
    """The users named by usernames or e-mail addresses, separated by commas, spaces or lines;
    ``InputFileError`` naming the first that matches nobody (or several people)."""
    User = get_user_model()
    found = []
    for name in names.replace(",", " ").split():
        matches = list(User.objects.filter(Q(username=name) | Q(email__iexact=name))[:2])
        if len(matches) != 1:
            what = "nobody" if not matches else "more than one person"
            raise InputFileError(f"{name[:80]!r} names {what}: give a username")
        found.append(matches[0])
    return list({user.pk: user for user in found}.values())


@transaction.atomic
def space_sharing_set(
    *, space: EmbeddingSpace, owner, shared_with: Sequence, study_admins: bool
) -> EmbeddingSpace:
    """Give the space an owner (or none: staff only), the people it is shared with, and
    whether every study admin may use it. Studies already on the space keep it."""
    space = EmbeddingSpace.objects.select_for_update().get(pk=space.pk)
    before = sharing_state(space)
    space.owner = owner
    space.shared_with_study_admins = study_admins
    space.save(update_fields=["owner", "shared_with_study_admins"])
    space.shared_with.set(shared_with)
    after = sharing_state(space)
    if after != before:
        audit_record(
            action=Action.SPACE_SHARING, target=space, detail={"before": before, "after": after}
        )
    return space


def sharing_state(space: EmbeddingSpace) -> dict:
    """Who owns the space and whom it is shared with, by username (for the audit log)."""
    return {
        "owner": space.owner.get_username() if space.owner_id else "",
        "shared_with": sorted(u.get_username() for u in space.shared_with.all()),
        "study_admins": space.shared_with_study_admins,
    }
