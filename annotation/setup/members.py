"""A study's members: add a person, invite a new one (account, link, e-mail), change a role
or target, remove."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

from accounts.invitations import find_user, invitation_path, invited_account_create
from annotation.access import Action, require
from annotation.models import MAX_TARGET, Membership, Study
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.access import is_staff
from common.errors import Conflict, InvalidInput, NotAllowed, duplicate_as_conflict

Role = Membership.Role


def _role(role: str) -> str:
    if role not in Role.values:
        raise InvalidInput(f"The role is one of {', '.join(Role.values)}.")
    return role


def _target(target) -> int | None:
    if target in (None, ""):
        return None
    try:
        target = int(target)
    except (TypeError, ValueError):
        raise InvalidInput("The target is a whole number of answers.") from None
    if not 1 <= target <= MAX_TARGET:
        raise InvalidInput(f"The target is between 1 and {MAX_TARGET:,} answers.")
    return target


@transaction.atomic
def member_add(*, user, study: Study, who: str, role: str, target=None) -> Membership:
    """Add an existing person (by username or e-mail) with a role."""
    require(user, study, Action.MANAGE, "Only an admin of the study can add members.")
    role, target = _role(role), _target(target)
    person = find_user(who)
    if person is None:
        raise InvalidInput(f"Nobody is called {who.strip()!r}; invite them instead.")
    taken = f"{person.username} is already a member of this study."
    if Membership.objects.filter(study=study, user=person).exists():
        raise Conflict(taken)
    with duplicate_as_conflict(taken):  # the same person added twice at once
        return Membership.objects.create(study=study, user=person, role=role, target=target)


@dataclass(frozen=True)
class Invitation:
    membership: Membership
    path: str  # the invitation link's path (uidb64/token)
    emailed: bool
    email_error: str = ""


@transaction.atomic
def member_invite(
    *, user, study: Study, username: str, email: str, role: str, link_for, target=None
) -> Invitation:
    """Create an account without a password, make it a member, and e-mail the invitation link
    (``link_for(uidb64, token)`` → absolute URL) when an address is given."""
    require(user, study, Action.MANAGE, "Only an admin of the study can invite people.")
    role, target = _role(role), _target(target)
    username, email = (username or "").strip(), (email or "").strip()
    person = invited_account_create(username=username, email=email)
    membership = Membership.objects.create(study=study, user=person, role=role, target=target)
    uid, token = invitation_path(person)
    link = link_for(uid, token)
    audit_record(
        action=AuditAction.MEMBERSHIP_INVITE,
        actor=user,
        target=membership,
        study_id=study.pk,
        detail={"user_id": person.pk, "username": username, "role": role, "emailed": bool(email)},
    )
    return _invitation_send(user, membership, link)


def _invitation_send(user, membership: Membership, link: str) -> Invitation:
    """E-mail the invitation link when the person has an address; the admin sees it anyway."""
    person, study = membership.user, membership.study
    emailed, problem = False, ""
    if person.email:
        try:
            send_mail(
                subject=f"You are invited to the study {study.name!r} on fairmetric",
                message=(
                    f"{user.get_username()} invited you to take part in {study.name!r} as "
                    f"{membership.role}.\n\nChoose your password here (the link works once, for "
                    f"{settings.INVITATION_DAYS} days):\n{link}\n\n"
                    f"Your username: {person.get_username()}\n"
                ),
                from_email=settings.DEFAULT_FROM_EMAIL,
                recipient_list=[person.email],
            )
            emailed = True
        except (OSError, ValueError) as error:  # SMTP down: the admin still has the link
            problem = str(error)[:200]
    return Invitation(membership, link, emailed, problem)


def member_invite_resend(*, user, membership: Membership, link_for) -> Invitation:
    """The invitation link of a member who has not chosen a password yet, shown and e-mailed
    again (a lost e-mail, a link that expired); audited. Conflict once they have one."""
    require(user, membership.study_id, Action.MANAGE, "Only an admin of the study can invite.")
    person = membership.user
    if person.has_usable_password():
        raise Conflict(f"{person.get_username()} has chosen a password already: nothing to send.")
    uid, token = invitation_path(person)
    audit_record(
        action=AuditAction.MEMBERSHIP_INVITE,
        actor=user,
        target=membership,
        study_id=membership.study_id,
        detail={"user_id": person.pk, "resent": True, "emailed": bool(person.email)},
    )
    return _invitation_send(user, membership, link_for(uid, token))


def _other_admins(membership: Membership) -> bool:
    return (
        Membership.objects.filter(study_id=membership.study_id, role=Role.ADMIN)
        .exclude(pk=membership.pk)
        .exists()
    )


@transaction.atomic
def member_change(*, user, membership: Membership, role: str, target=None) -> Membership:
    """Change a member's role and target override (empty target: the study's)."""
    require(user, membership.study_id, Action.MANAGE, "Only an admin of the study can do this.")
    role, target = _role(role), _target(target)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if (
        membership.user_id == user.pk
        and membership.role == Role.ADMIN
        and role != Role.ADMIN
        and not is_staff(user)
        and not _other_admins(membership)
    ):
        raise NotAllowed("You are the study's only admin; make someone else admin first.")
    membership.role, membership.target = role, target
    membership.save(update_fields=["role", "target"])
    return membership


@transaction.atomic
def member_remove(*, user, membership: Membership) -> None:
    """Remove a member; their answers and groups stay in the study."""
    require(user, membership.study_id, Action.MANAGE, "Only an admin of the study can do this.")
    if membership.user_id == user.pk and not is_staff(user) and not _other_admins(membership):
        raise NotAllowed("You are the study's only admin; make someone else admin first.")
    membership.delete()


def memberships_of(study: Study, pk) -> Membership:
    """A membership of the study by id (NotFound-free: None)."""
    return Membership.objects.filter(study=study, pk=pk).select_related("user").first()
