"""Login attempts per username + client IP, counted atomically in the database.

At most ``LOGIN_FAILURE_LIMIT`` passwords are checked for one username from one address within
``LOGIN_FAILURE_WINDOW`` seconds (counted from the first attempt), however many requests arrive
at once: the backend below runs first in ``AUTHENTICATION_BACKENDS`` and *takes a slot* with one
atomic statement (``audit.limits.window_take``) before any password is checked; a slot beyond
the limit raises ``PermissionDenied``, which stops ``authenticate``. A successful login gives
the slots back (the count is deleted), so only failures accumulate. (The counter was a
read-then-write in the cache: 30 simultaneous wrong passwords had 28 checked against a limit
of 5.) Applies to every path through ``django.contrib.auth.authenticate`` (the login page and
the admin's); the login page answers 429 with a readable message once the limit is reached.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver

from audit import limits
from audit.context import client_ip

from .sso import sso_enabled


def _key(username: str, ip: str | None) -> str:
    digest = hashlib.sha256(f"{(username or '').strip().lower()}|{ip or ''}".encode()).hexdigest()
    return f"login:{digest[:40]}"


def locked_for(username: str, request) -> int:
    """Seconds until ``username`` may try again from this request's address (0: now)."""
    if request is None:
        return 0
    count, until = limits.window_read(_key(username, client_ip(request)))
    if count < settings.LOGIN_FAILURE_LIMIT:
        return 0
    return max(1, math.ceil(until - time.time()))


def attempt_take(username: str, request) -> bool:
    """Count one login attempt; False when it is beyond the limit (refuse it unchecked)."""
    if request is None:
        return True
    count, _ = limits.window_take(
        _key(username, client_ip(request)), window=settings.LOGIN_FAILURE_WINDOW
    )
    return count <= settings.LOGIN_FAILURE_LIMIT


class LoginThrottleBackend(ModelBackend):
    """First in AUTHENTICATION_BACKENDS: refuses a locked-out username+IP before any password
    check (``PermissionDenied`` stops ``authenticate``); never authenticates anyone itself.

    It is a ModelBackend only for ``get_user`` (``force_login`` and sessions may name the first
    backend); permissions are left to the real ModelBackend after it.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None and not attempt_take(username, request):
            raise PermissionDenied("Too many failed logins.")
        return None

    def get_all_permissions(self, user_obj, obj=None):
        return set()

    def has_perm(self, user_obj, perm, obj=None):
        return False

    def has_module_perms(self, user_obj, app_label):
        return False


@receiver(user_logged_in)
def _forget_failures(sender, request, user, **kwargs) -> None:
    if request is not None:
        limits.forget(_key(user.get_username(), client_ip(request)))


class LoginView(auth_views.LoginView):
    """Django's login page, answering 429 with a message while the username+IP is locked."""

    http_method_names = ["get", "post", "head", "options"]  # FormView would take PUT as POST

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if sso_enabled():
            context["sso_name"] = settings.OIDC_PROVIDER_NAME
        context["sso_failed"] = self.request.GET.get("sso") == "failed"
        return context

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
