"""API tokens for downloading metrics: create, revoke, authenticate.

A token is ``fm_`` + 43 url-safe characters. Only its sha256 is stored, so a leaked database
does not leak usable tokens; the plaintext is returned once by :func:`api_token_create`.
Clients send it as ``Authorization: Bearer fm_…`` (or ``Token fm_…``). Headers whose token
does not start with ``fm_`` are left to the other authentication classes (e.g. DRF's own
``TokenAuthentication``), so both kinds can be configured side by side.

A token's user is cached for ``TOKEN_CACHE_SECONDS`` under ``fm:token:<sha256>`` (the answer
path then needs no query to authenticate); revoking or deleting the token, and saving or
deleting its user (``is_active``, ``is_staff``…), forget the entry at once. A cache that does not
answer costs the query, never a request.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from audit.services import Action as AuditAction
from audit.services import audit_record
from common.text import invisible, text_problem

from .models import ApiToken

TOKEN_PREFIX = "fm_"
MAX_ACTIVE_TOKENS = 20
# last_used_at is refreshed at most this often, so a job polling every second costs no writes.
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_CACHE_SECONDS = 60


class TokenError(Exception):
    """A token request that cannot be honoured; the message is shown to the user."""


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _cache_key(key_hash: str) -> str:
    return f"fm:token:{key_hash}"


def _forget(*key_hashes: str) -> None:
    keys = [_cache_key(h) for h in key_hashes]
    if not keys:
        return
    with contextlib.suppress(Exception):  # a down cache: the entries expire after 60 s
        cache.delete_many(keys)
    transaction.on_commit(lambda: _forget_now(keys))


def _forget_now(keys: list[str]) -> None:
    with contextlib.suppress(Exception):
        cache.delete_many(keys)


@transaction.atomic
def api_token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new active token of ``user``; returns the row and the plaintext (shown once)."""
    name = (name or "").strip()
    if not name:
        raise TokenError("Give the token a name, e.g. the job that will use it.")
    if len(name) > 100:
        raise TokenError("A token name has at most 100 characters.")
    if text_problem(name) or invisible(name):
        raise TokenError("A token name must be visible text (no NUL or control characters).")
    # Lock the owner's row: concurrent creates of one user queue here, so the count below is
    # exact (select_for_update on the token rows locks only rows that exist: 30 concurrent
    # creates all counted the same tokens and left 27 active against a cap of 20).
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
    if active.count() >= MAX_ACTIVE_TOKENS:
        raise TokenError(f"You already have {MAX_ACTIVE_TOKENS} active tokens; revoke one first.")
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=key[:10], key_hash=_hash(key))
    audit_record(
        action=AuditAction.TOKEN_CREATE,
        target=token,
        actor=user,
        detail={"name": name, "prefix": token.prefix, "owner_id": user.pk},
    )
    return token, key


@transaction.atomic
def api_token_revoke(*, user, token_id: int) -> ApiToken:
    """Revoke one of the user's own tokens (idempotent)."""
    token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is None:
        raise TokenError("No such token.")
    token_revoke(token=token, actor=user)
    return token


@transaction.atomic
def token_revoke(*, token: ApiToken, actor) -> bool:
    """Revoke ``token`` (the owner's page or an admin); True when it was active until now."""
    if token.revoked_at is not None:
        return False
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    _forget(token.key_hash)
    audit_record(
        action=AuditAction.TOKEN_REVOKE,
        target=token,
        actor=actor,
        detail={"name": token.name, "prefix": token.prefix, "owner_id": token.user_id},
    )
    return True


def api_token_user(*, key: str):
    """The active user a plaintext token belongs to, or None."""
    if not key.startswith(TOKEN_PREFIX):
        return None
    key_hash = _hash(key)
    try:
        cached = cache.get(_cache_key(key_hash))
    except Exception:  # noqa: BLE001 - a down cache costs the query
        cached = None
    now = timezone.now()
    if cached is not None:
        token_pk, user, last_used_at = cached
    else:
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=key_hash, revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            return None
        token_pk, user, last_used_at = token.pk, token.user, token.last_used_at
    if last_used_at is None or last_used_at < now - LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token_pk).update(last_used_at=now)
        last_used_at = now
        cached = None
    if cached is None:
        with contextlib.suppress(Exception):
            cache.set(_cache_key(key_hash), (token_pk, user, last_used_at), TOKEN_CACHE_SECONDS)
    return user


@receiver([post_save, post_delete], sender=ApiToken)
def _token_changed(sender, instance: ApiToken, **kwargs) -> None:
    if kwargs.get("update_fields") == frozenset({"last_used_at"}):
        return
    _forget(instance.key_hash)


def _user_changed(sender, instance, **kwargs) -> None:
    """A user's activity or rights changed: forget their tokens' cached copies of them."""
    if kwargs.get("update_fields") == frozenset({"last_login"}):
        return
    _forget(*ApiToken.objects.filter(user_id=instance.pk).values_list("key_hash", flat=True))


post_save.connect(_user_changed, sender=get_user_model(), dispatch_uid="tokens-user-saved")
post_delete.connect(_user_changed, sender=get_user_model(), dispatch_uid="tokens-user-deleted")


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer fm_…`` (or ``Token fm_…``) → the token's user."""

    keywords = (b"bearer", b"token")

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in self.keywords:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Authorization header: '<Bearer> <token>'.")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        if not key.startswith(TOKEN_PREFIX):
            return None  # not ours: DRF's TokenAuthentication may know it
        user = api_token_user(key=key)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return user, key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'
