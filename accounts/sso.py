"""Single sign-on with the team's OpenID Connect provider (mozilla-django-oidc's code flow with
PKCE and a nonce; the ID token's signature checked against the provider's JWKS).

Inert until ``OIDC_RP_CLIENT_ID`` is set (``fairmetric_site/settings_integrations.py``): then the
login page offers "Log in with …" beside the local form, which keeps working. Who signs in:

* a person whose verified e-mail address (the ``email`` claim; ``email_verified`` must not be
  false) is an active account's address (one per address, any case: the accounts' unique index)
  signs in as that account;
* anyone else gets a new account only when ``OIDC_CREATE_USER`` is on, named after their
  ``preferred_username`` (or the e-mail's local part; a number added when taken), with no local
  password;
* ``OIDC_STAFF_CLAIM`` names a claim (e.g. ``groups``) whose value — or one of whose values —
  must be in ``OIDC_STAFF_VALUES`` for staff; checked at every sign-in, so removing someone from
  the group at the provider removes staff here at their next sign-in. Superusers are never made
  or unmade here.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.http import Http404
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

logger = logging.getLogger(__name__)
USERNAME_CHARS = re.compile(r"[^\w.@+-]")


def sso_enabled() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


def staff_from_claims(claims: dict) -> bool | None:
    """Whether the claims make the person staff; None when no claim is mapped to staff."""
    name = settings.OIDC_STAFF_CLAIM
    if not name:
        return None
    value = claims.get(name)
    values = value if isinstance(value, list | tuple) else [value]
    return any(str(v) in settings.OIDC_STAFF_VALUES for v in values if v is not None)


def _free_username(claims: dict) -> str:
    User = get_user_model()
    base = claims.get("preferred_username") or claims["email"].split("@", 1)[0]
    base = USERNAME_CHARS.sub("", str(base))[:140] or "user"
    name, n = base, 1
    while User.objects.filter(username__iexact=name).exists():
        n += 1
        name = f"{base}{n}"
    return name


class TeamSignOnBackend(OIDCAuthenticationBackend):
    """The provider's code flow, matched to accounts by verified e-mail (module docstring)."""

    def __init__(self, *args, **kwargs):
        self.enabled = sso_enabled()
        if self.enabled:
            super().__init__(*args, **kwargs)
        else:
            self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if not self.enabled:
            return None
        user = super().authenticate(request, **kwargs)
        if user is not None and not self.user_can_authenticate(user):
            logger.info("single sign-on refused for inactive account %s", user.pk)
            return None
        return user

    def verify_claims(self, claims: dict) -> bool:
        return bool(claims.get("email")) and claims.get("email_verified", True) is not False

    def filter_users_by_claims(self, claims: dict):
        return self.UserModel.objects.filter(email__iexact=claims["email"], is_active=True)

    def create_user(self, claims: dict):
        staff = staff_from_claims(claims)
        for _ in range(3):  # a concurrent first sign-in may take the same free name
            try:
                with transaction.atomic():
                    user = self.UserModel.objects.create_user(
                        _free_username(claims), email=claims["email"], is_staff=bool(staff)
                    )
            except IntegrityError:
                existing = self.filter_users_by_claims(claims).first()
                if existing is not None:
                    return self.update_user(existing, claims)
                continue
            user.set_unusable_password()
            user.save(update_fields=["password"])
            logger.info("single sign-on created account %s", user.username)
            return user
        return None

    def update_user(self, user, claims: dict):
        staff = staff_from_claims(claims)
        if staff is not None and user.is_staff != staff and not user.is_superuser:
            user.is_staff = staff
            user.save(update_fields=["is_staff"])
        return user


class SignOnStart(OIDCAuthenticationRequestView):
    """``/accounts/sso/``: off to the provider (with ``next`` kept for the way back); 404 while
    single sign-on is off."""

    def get(self, request):
        if not sso_enabled():
            raise Http404("Single sign-on is not set up.")
        return super().get(request)


class SignOnCallback(OIDCAuthenticationCallbackView):
    """``/accounts/sso/callback/``: the provider's answer; 404 while single sign-on is off."""

    def get(self, request):
        if not sso_enabled():
            raise Http404("Single sign-on is not set up.")
        return super().get(request)
