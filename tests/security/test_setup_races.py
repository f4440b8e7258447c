"""Set-up writes hold under races (issue 26, finding 6): 30 identical POSTs released together
against a live server on PostgreSQL (the server, barrier and form helpers of
``test_limits_concurrency``).

Before the fix: member add 2 × 500, invite 3 × 500, duplicate study 3 × 500 (uncaught
``IntegrityError``); 30 invitations with one address made 4 accounts; the one-time invitation
link accepted 4 of 30 simultaneous uses. Now a lost race answers what the read check answers
(400 on the members page, 409 for a duplicate name or a used link), the database refuses a
second account with an address in any case (``accounts.0002``), and a link is used once.
"""
# ruff: noqa: F811 - the live server's fixtures are imported from test_limits_concurrency

from __future__ import annotations

import http.cookiejar
import urllib.error
import urllib.parse
import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection
from django.test import Client
from django.urls import reverse

from accounts.invitations import invitation_path, invited_account_create
from annotation.models import Membership, Study
from tests.annotation.factories import make_study, make_user
from tests.conftest import require
from tests.security.test_limits_concurrency import (  # noqa: F401 - fixtures: server, space
    N,
    _all_at_once,
    _form,
    _request,
    server,
    space,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_session(server, space, settings):
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")
    study = make_study(space=space, name="Raced")
    admin = make_user("boss", study=study, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    return study, cookie


def test_thirty_simultaneous_member_adds_make_one_membership(server, admin_session):
    study, cookie = admin_session
    person = make_user("victim")
    url = server.url + reverse("annotation:study-members", args=[study.pk])
    fields = {"add-who": "victim", "add-role": "annotator"}
    statuses = _all_at_once(lambda i: _request(url, *_form(fields, cookie)))
    assert Membership.objects.filter(study=study, user=person).count() == 1
    # (_request follows the redirect of a success to its page: 200)
    assert statuses.count(200) == 1, statuses  # added; the others told so on the page
    assert statuses.count(400) == N - 1, statuses


def test_thirty_simultaneous_invitations_make_one_account(server, admin_session):
    study, cookie = admin_session
    url = server.url + reverse("annotation:study-members", args=[study.pk])
    fields = {
        "action": "invite",
        "invite-username": "newcomer",
        "invite-email": "new@example.org",
        "invite-role": "annotator",
    }
    statuses = _all_at_once(lambda i: _request(url, *_form(fields, cookie)))
    assert get_user_model().objects.filter(username__iexact="newcomer").count() == 1
    assert Membership.objects.filter(study=study, user__username="newcomer").count() == 1
    assert statuses.count(200) == 1, statuses  # the page with the link
    assert statuses.count(400) == N - 1, statuses


def test_one_account_per_address_whatever_the_case_and_the_username(server, admin_session):
    study, cookie = admin_session
    url = server.url + reverse("annotation:study-members", args=[study.pk])

    def invite(i):
        fields = {
            "action": "invite",
            "invite-username": f"person{i}",
            "invite-email": "Shared@Example.org" if i % 2 else "shared@example.ORG",
            "invite-role": "annotator",
        }
        return _request(url, *_form(fields, cookie))

    statuses = _all_at_once(invite)
    assert get_user_model().objects.filter(email__iexact="shared@example.org").count() == 1
    assert statuses.count(200) == 1, statuses
    assert statuses.count(400) == N - 1, statuses


def test_thirty_simultaneous_duplicates_make_one_copy(server, admin_session):
    study, cookie = admin_session
    url = server.url + reverse("annotation:study-duplicate", args=[study.pk])
    statuses = _all_at_once(lambda i: _request(url, *_form({"name": "Raced copy"}, cookie)))
    assert Study.objects.filter(name="Raced copy").count() == 1
    assert statuses.count(200) == 1, statuses  # the copy's settings page, after the redirect
    assert statuses.count(409) == N - 1, statuses


class SlowerHasher(PBKDF2PasswordHasher):
    """A tenth of the production hasher's work: setting a password takes long enough (tens of
    ms) for the other uses of the link to pass its check meanwhile, as in production; MD5,
    the tests' usual hasher, closes that window and hid the race."""

    iterations = PBKDF2PasswordHasher.iterations // 10


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_an_invitation_link_is_used_once_by_thirty_simultaneous_uses(
    server, admin_session, settings
):
    settings.PASSWORD_HASHERS = ["tests.security.test_setup_races.SlowerHasher"]
    person = invited_account_create(username="invited", email="")
    uid, token = invitation_path(person)
    link = server.url + reverse("accounts:invitation", args=[uid, token])
    browsers = []
    for _ in range(N):  # each opens the link first: a session holding the token, the form
        jar = http.cookiejar.CookieJar()
        urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)).open(link).read()
        cookies = {c.name: c.value for c in jar}
        set_password = link.rsplit("/", 2)[0] + "/set-password/"
        browsers.append((set_password, cookies))

    def use(i):
        url, cookies = browsers[i]
        data = urllib.parse.urlencode(
            {
                "new_password1": f"chosen-password-{i}-Xy",
                "new_password2": f"chosen-password-{i}-Xy",
                "csrfmiddlewaretoken": cookies["csrftoken"],
            }
        ).encode()
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
        }
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.build_opener(_NoRedirect).open(request, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    statuses = _all_at_once(use)
    assert statuses.count(302) == 1, statuses  # one use sets the password and signs in
    # The others: "used already" (409) when they passed the link's check before the winner
    # wrote, else Django's "this link does not work" page (200).
    assert set(statuses) <= {302, 409, 200}, statuses
    winner = statuses.index(302)
    person.refresh_from_db()
    assert person.check_password(f"chosen-password-{winner}-Xy")
