"""Accounts made by invitation, and finding people: the rules for usernames and addresses.

An invited person gets an account without a usable password; the invitation link carries
Django's password-reset token, which stops working once the password is set, or after
``INVITATION_DAYS``. The page behind the link is ``accounts.views.InvitationView``.

Both rules hold under races (issue 26: 30 simultaneous invitations with one address made 4
accounts; the link accepted 4 of 30 simultaneous uses): one account per e-mail address is a
unique index on ``lower(email)`` (migration ``accounts.0002``; the read check before it only
gives the friendlier message), and a link is used by one conditional ``UPDATE``
(:func:`invitation_accept`: the password changes only while it is still the one the link was
made for).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.hashers import make_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from common.errors import Conflict, InvalidInput, duplicate_as_conflict


def find_user(who: str):
    """A user by username or e-mail address (case-insensitive); None when there is none."""
    who = (who or "").strip()
    if not who:
        raise InvalidInput("Give a username or an e-mail address.")
    users = get_user_model().objects.filter(is_active=True)
    user = users.filter(username__iexact=who).first()
    if user is None and "@" in who:
        matches = list(users.filter(email__iexact=who)[:2])
        if len(matches) > 1:
            raise InvalidInput(f"Several people use {who}; add them by username.")
        user = matches[0] if matches else None
    return user


def invited_account_create(*, username: str, email: str):
    """A new account without a usable password (the invitation link sets one); the caller
    holds the transaction."""
    User = get_user_model()
    if not username:
        raise InvalidInput("Give the new person a username.")
    try:
        User.username_validator(username)
    except ValidationError as error:
        raise InvalidInput(" ".join(error.messages)) from None
    if len(username) > 150:
        raise InvalidInput("A username has at most 150 characters.")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise InvalidInput(f"{email!r} is not an e-mail address.") from None
    name_taken = f"The username {username!r} is taken; add that person instead."
    email_taken = f"Someone already uses {email}; add them by e-mail instead."
    if User.objects.filter(username__iexact=username).exists():
        raise Conflict(name_taken)
    if email and User.objects.filter(email__iexact=email).exists():
        raise Conflict(email_taken)
    person = User(username=username, email=email)
    person.set_unusable_password()

    def which() -> str:  # the same account invited twice at once: which rule refused it
        same_email = email and User.objects.filter(email__iexact=email).exists()
        return email_taken if same_email else name_taken

    with duplicate_as_conflict(which):
        person.save()
    return person


def invitation_accept(*, person, password: str) -> bool:
    """Set the invited person's password, once: True when this call set it; False when the
    link was used meanwhile (the password is no longer the one the link was checked against)."""
    used = person.password  # the hash the link's token was made from (and checked against)
    new = make_password(password)
    changed = get_user_model().objects.filter(pk=person.pk, password=used).update(password=new)
    if not changed:
        return False
    person.password = new
    password_validation.password_changed(password, person)
    return True


def invitation_path(person) -> tuple[str, str]:
    """The uidb64 and token of a person's invitation (Django's password-reset token: it stops
    working once the password is set, or after INVITATION_DAYS)."""
    return urlsafe_base64_encode(force_bytes(person.pk)), default_token_generator.make_token(person)
