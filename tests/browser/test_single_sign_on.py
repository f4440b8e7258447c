"""Single sign-on in real Chromium against a real OpenID Connect provider — django-oauth-toolkit
in a second process (``tests/oidc_provider/``), RS256 ID tokens checked against its JWKS, PKCE:
a member signs in through the provider and reaches her study; a newcomer in the provider's
staff group gets a staff account without a local password; with account creation off, a
stranger is refused with a message; the local login form keeps working beside it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model

from accounts.sso import TeamSignOnBackend, staff_from_claims
from annotation.models import Membership
from tests.annotation.factories import PASSWORD, make_space, make_study
from tests.celery_support import wait_for
from tests.conftest import ROOT, subprocess_env

pytestmark = [pytest.mark.browser, pytest.mark.services]

PEOPLE = {
    "alice": ("alice@team.example", "alice-at-the-idp", ""),
    "carol": ("carol@team.example", "carol-at-the-idp", "fm-admins,staff-room"),
    "mallory": ("mallory@elsewhere.example", "mallory-at-the-idp", ""),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def provider(live_server, tmp_path):
    """The provider on a free port, its discovery document read; stopped at teardown."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "provider.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    port = free_port()
    people = ";".join(f"{u}:{e}:{p}:{g}" for u, (e, p, g) in PEOPLE.items())
    env = subprocess_env(
        PROVIDER_DB=str(tmp_path / "provider.sqlite3"),
        PROVIDER_KEY=str(pem),
        CLIENT_ID="fairmetric-test",
        CLIENT_SECRET="s3cret-of-the-client",
        REDIRECT_URI=f"{live_server.url}/accounts/sso/callback/",
        PEOPLE=people,
        DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings",
    )
    log = open(tmp_path / "provider.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.oidc_provider.serve", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/o"

    def discovery():
        try:
            with urllib.request.urlopen(
                f"{base}/.well-known/openid-configuration/", timeout=2
            ) as r:
                return json.load(r)
        except OSError:
            assert proc.poll() is None, Path(log.name).read_text()
            return None

    try:
        yield wait_for(discovery, 60, "the OpenID provider to start")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture
def signed_on(settings, provider):
    settings.OIDC_RP_CLIENT_ID = "fairmetric-test"
    settings.OIDC_RP_CLIENT_SECRET = "s3cret-of-the-client"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = provider["authorization_endpoint"]
    settings.OIDC_OP_TOKEN_ENDPOINT = provider["token_endpoint"]
    settings.OIDC_OP_USER_ENDPOINT = provider["userinfo_endpoint"]
    settings.OIDC_OP_JWKS_ENDPOINT = provider["jwks_uri"]
    settings.OIDC_PROVIDER_NAME = "Team IdP"
    settings.OIDC_CREATE_USER = True
    settings.OIDC_STAFF_CLAIM = "groups"
    settings.OIDC_STAFF_VALUES = ["fm-admins"]
    return settings


def sign_on(page, base: str, path: str, username: str) -> None:
    page.goto(f"{base}{path}")
    page.click("#sso-login")
    page.wait_for_url("**/login/**")
    page.fill("#id_username", username)
    page.fill("#id_password", PEOPLE[username][1])
    page.click("button[type=submit]")


def test_people_sign_on_through_the_teams_provider(browser, live_server, signed_on, media_root):
    User = get_user_model()
    alice = User.objects.create_user("alice.local", email="Alice@Team.example", password=PASSWORD)
    study = make_study(space=make_space(), name="Wages study")
    Membership.objects.create(study=study, user=alice, role=Membership.Role.ANNOTATOR)

    context = browser.new_context()
    page = context.new_page()
    sign_on(page, live_server.url, f"/studies/{study.pk}/", "alice")
    page.wait_for_url(f"{live_server.url}/studies/{study.pk}/")
    assert "Wages study" in page.content()
    assert User.objects.count() == 1  # matched by e-mail, any case: no new account
    context.close()

    context = browser.new_context()
    page = context.new_page()
    sign_on(page, live_server.url, "/", "carol")
    page.wait_for_url(f"{live_server.url}/")
    carol = User.objects.get(email="carol@team.example")
    assert carol.username == "carol"
    assert carol.is_staff
    assert not carol.is_superuser
    assert not carol.has_usable_password()
    context.close()

    signed_on.OIDC_CREATE_USER = False
    context = browser.new_context()
    page = context.new_page()
    sign_on(page, live_server.url, "/", "mallory")
    page.wait_for_url("**/accounts/login/?sso=failed")
    assert "Single sign-on did not complete" in page.content()
    assert not User.objects.filter(email="mallory@elsewhere.example").exists()

    page.fill("#id_username", "alice.local")  # the local form, beside it
    page.fill("#id_password", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    context.close()


def test_without_a_provider_the_login_page_offers_none_and_its_routes_are_404(client, db):
    assert b"sso-login" not in client.get("/accounts/login/").content
    assert client.get("/accounts/sso/").status_code == 404
    assert client.get("/accounts/sso/callback/?code=x&state=y").status_code == 404


def test_staff_follows_the_providers_group_at_every_sign_in(settings, db):
    settings.OIDC_STAFF_CLAIM = "groups"
    settings.OIDC_STAFF_VALUES = ["fm-admins"]
    backend = TeamSignOnBackend()
    User = get_user_model()
    dana = User.objects.create_user("dana", email="dana@team.example", is_staff=True)
    root = User.objects.create_user("root", email="root@team.example", is_superuser=True)
    assert staff_from_claims({"groups": "fm-admins"}) is True
    assert staff_from_claims({"groups": ["x", "fm-admins"]}) is True
    assert staff_from_claims({}) is False
    backend.update_user(dana, {"email": dana.email, "groups": ["readers"]})
    dana.refresh_from_db()
    assert not dana.is_staff  # left the group at the provider
    backend.update_user(root, {"email": root.email, "groups": []})
    root.refresh_from_db()
    assert root.is_superuser  # never changed here
    assert not backend.verify_claims({"email": "e@x.example", "email_verified": False})
    assert not backend.verify_claims({"sub": "no-email"})
    settings.OIDC_STAFF_CLAIM = ""
    assert staff_from_claims({"groups": ["fm-admins"]}) is None
