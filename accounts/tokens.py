"""API tokens for downloading metrics: create, revoke, authenticate.

A token is ``fm_`` + 43 url-safe characters. Only its sha256 is stored, so a leaked database
does not leak usable tokens; the plaintext is returned once by :func:`api_token_create`.
Clients send it as ``Authorization: Bearer fm_…`` (or ``Token fm_…``). Headers whose token
does not start with ``fm_`` are left to the other authentication classes (e.g. DRF's own
``TokenAuthentication``), so both kinds can be configured side by side.

A token's user is cached for ``TOKEN_CACHE_SECONDS`` under ``fm:token2:<sha256>`` (the answer
path then needs no query to authenticate); revoking or deleting the token, and saving or
deleting its user (``is_active``, ``is_staff``…), forget the entry at once. A cache that does not
answer costs the query, never a request.

A token may be limited to studies and may expire. An expired token is refused (401, saying when
it expired). A limited token's user carries the study ids (:func:`token_scope`), and
``annotation.access.study_role`` gives that user no role outside them: another study's endpoints
answer 404 as for an outsider, and what needs no study (creating one) answers 403.
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

from . import hooks
from .models import ApiToken

TOKEN_PREFIX = "fm_"
MAX_ACTIVE_TOKENS = 20
# last_used_at is refreshed at most this often, so a job polling every second costs no writes.
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_CACHE_SECONDS = 60


MAX_EXPIRY_DAYS = 366
SCOPE_ATTRIBUTE = "_token_study_ids"


class TokenError(Exception):
    """A token request that cannot be honoured; the message is shown to the user."""


class TokenExpired(TokenError):
    """The token is past its expiry."""


def token_scope(user) -> frozenset[int] | None:
    """The study ids the request's token is limited to; None when not limited (or a session)."""
    if user is None:
        return None
    return user.__dict__.get(SCOPE_ATTRIBUTE)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _cache_key(key_hash: str) -> str:
    # "token2": the entry holds the token's studies and expiry (an entry of the earlier shape,
    # left by a server before the upgrade, is never read).
    return f"fm:token2:{key_hash}"


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


def _scope_check(user, study_ids, expires_at) -> list[int]:
    ids = sorted({int(i) for i in study_ids or ()})
    if ids:
        offered = dict(hooks.token_studies(user))
        refused = [i for i in ids if i not in offered]
        if refused:
            raise TokenError(
                f"You cannot limit a token to study {refused[0]}: it is not one of yours."
            )
    if expires_at is not None:
        now = timezone.now()
        if expires_at <= now:
            raise TokenError("A token's expiry must be in the future.")
        if expires_at > now + timedelta(days=MAX_EXPIRY_DAYS):
            raise TokenError(f"A token expires at most {MAX_EXPIRY_DAYS} days from now.")
    return ids


@transaction.atomic
def api_token_create(*, user, name: str, study_ids=None, expires_at=None) -> tuple[ApiToken, str]:
    """A new active token of ``user``; returns the row and the plaintext (shown once).

    ``study_ids``: limit it to these studies (each one the user may open, as offered by
    ``accounts.hooks.token_studies``); ``expires_at``: when it stops working (at most
    ``MAX_EXPIRY_DAYS`` ahead)."""
    name = (name or "").strip()
    if not name:
        raise TokenError("Give the token a name, e.g. the job that will use it.")
    if len(name) > 100:
        raise TokenError("A token name has at most 100 characters.")
    if text_problem(name) or invisible(name):
        raise TokenError("A token name must be visible text (no NUL or control characters).")
    ids = _scope_check(user, study_ids, expires_at)
    # Lock the owner's row: concurrent creates of one user queue here, so the count below is
    # exact (select_for_update on the token rows locks only rows that exist: 30 concurrent
    # creates all counted the same tokens and left 27 active against a cap of 20).
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
    if active.count() >= MAX_ACTIVE_TOKENS:
        raise TokenError(f"You already have {MAX_ACTIVE_TOKENS} active tokens; revoke one first.")
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[:10],
        key_hash=_hash(key),
        study_ids=ids,
        expires_at=expires_at,
    )
    detail = {"name": name, "prefix": token.prefix, "owner_id": user.pk, "study_ids": ids}
    detail["expires_at"] = expires_at.isoformat() if expires_at else None
    audit_record(action=AuditAction.TOKEN_CREATE, target=token, actor=user, detail=detail)
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
    """The active user a plaintext token belongs to, or None; :class:`TokenExpired` past its
    expiry. A limited token's user carries its study ids (:func:`token_scope`)."""
    if not key.startswith(TOKEN_PREFIX):
        return None
    key_hash = _hash(key)
    try:
        cached = cache.get(_cache_key(key_hash))
    except Exception:  # noqa: BLE001 - a down cache costs the query
        cached = None
    now = timezone.now()
    if cached is not None:
        token_pk, user, last_used_at, study_ids, expires_at = cached
    else:
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=key_hash, revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            return None
        token_pk, user, last_used_at = token.pk, token.user, token.last_used_at
        study_ids, expires_at = token.study_ids, token.expires_at
    if expires_at is not None and expires_at <= now:
        raise TokenExpired(f"This token expired on {expires_at:%Y-%m-%d %H:%M} UTC.")
    if last_used_at is None or last_used_at < now - LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token_pk).update(last_used_at=now)
        last_used_at = now
        cached = None
    if cached is None:
        with contextlib.suppress(Exception):
            entry = (token_pk, user, last_used_at, study_ids, expires_at)
            cache.set(_cache_key(key_hash), entry, TOKEN_CACHE_SECONDS)
    user.__dict__[SCOPE_ATTRIBUTE] = frozenset(study_ids) if study_ids else None
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
        try:
            user = api_token_user(key=key)
        except TokenExpired as error:
            raise exceptions.AuthenticationFailed(str(error)) from None
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return user, key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'
