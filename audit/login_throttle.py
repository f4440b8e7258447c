"""Failed-login limit per username + client IP, in the shared cache.

After ``LOGIN_FAILURE_LIMIT`` failures within ``LOGIN_FAILURE_WINDOW`` seconds every further
attempt for that username from that address is refused - even with the right password - until
the window (counted from the first failure) ends. Applies to every login path that calls
``django.contrib.auth.authenticate`` (the login page and the admin's): the backend below runs
first and raises ``PermissionDenied``; the login page answers 429 with a readable message.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver

from .context import client_ip


def _key(username: str, ip: str | None) -> str:
    digest = hashlib.sha256(f"{(username or '').strip().lower()}|{ip or ''}".encode()).hexdigest()
    return f"login-failures:{digest[:40]}"


def _state(key: str) -> tuple[int, float]:
    value = cache.get(key)
    if not value or value[1] <= time.time():
        return 0, 0.0
    return value


def locked_for(username: str, request) -> int:
    """Seconds until ``username`` may try again from this request's address (0: now)."""
    if request is None:
        return 0
    count, until = _state(_key(username, client_ip(request)))
    if count < settings.LOGIN_FAILURE_LIMIT:
        return 0
    return max(1, math.ceil(until - time.time()))


def failure_record(username: str, request) -> None:
    if request is None:
        return
    key = _key(username, client_ip(request))
    count, until = _state(key)
    if not count:
        until = time.time() + settings.LOGIN_FAILURE_WINDOW
    cache.set(key, (count + 1, until), timeout=max(1, math.ceil(until - time.time())))


class LoginThrottleBackend(ModelBackend):
    """First in AUTHENTICATION_BACKENDS: refuses a locked-out username+IP before any password
    check (``PermissionDenied`` stops ``authenticate``); never authenticates anyone itself.

    It is a ModelBackend only for ``get_user`` (``force_login`` and sessions may name the first
    backend); permissions are left to the real ModelBackend after it.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None and locked_for(username, request):
            raise PermissionDenied("Too many failed logins.")
        return None

    def get_all_permissions(self, user_obj, obj=None):
        return set()

    def has_perm(self, user_obj, perm, obj=None):
        return False

    def has_module_perms(self, user_obj, app_label):
        return False


@receiver(user_login_failed)
def _count_failure(sender, credentials, request=None, **kwargs) -> None:
    failure_record(credentials.get("username", ""), request)


@receiver(user_logged_in)
def _forget_failures(sender, request, user, **kwargs) -> None:
    if request is not None:
        cache.delete(_key(user.get_username(), client_ip(request)))


class LoginView(auth_views.LoginView):
    """Django's login page, answering 429 with a message while the username+IP is locked."""

    http_method_names = ["get", "post", "head", "options"]  # FormView would take PUT as POST

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        wait = locked_for(username, request)
        if wait:
            # An unbound form: binding it would check the password (and count a failure).
            form = self.get_form_class()(request, initial={"username": username[:150]})
            form.cleaned_data = {}
            minutes = math.ceil(wait / 60)
            form.add_error(
                None,
                (
                    f"Too many failed logins for this username from your address. "
                    f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
                ),
            )
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)
