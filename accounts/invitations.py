"""Accounts made by invitation, and finding people: the rules for usernames and addresses.

An invited person gets an account without a usable password; the invitation link carries
Django's password-reset token, which stops working once the password is set, or after
``INVITATION_DAYS``. The page behind the link is ``accounts.views.InvitationView``.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from common.errors import Conflict, InvalidInput


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
    if User.objects.filter(username__iexact=username).exists():
        raise Conflict(f"The username {username!r} is taken; add that person instead.")
    if email and User.objects.filter(email__iexact=email).exists():
        raise Conflict(f"Someone already uses {email}; add them by e-mail instead.")
    person = User(username=username, email=email)
    person.set_unusable_password()
    person.save()
    return person


def invitation_path(person) -> tuple[str, str]:
    """The uidb64 and token of a person's invitation (Django's password-reset token: it stops
    working once the password is set, or after INVITATION_DAYS)."""
    return urlsafe_base64_encode(force_bytes(person.pk)), default_token_generator.make_token(person)
