"""Login, logout, the landing page and the demo accounts."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse


def test_root_sends_anonymous_visitors_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b'name="password"' in page.content


@pytest.mark.django_db
def test_demo_admin_logs_in_and_lands_on_home(client, monkeypatch, settings):
    monkeypatch.delenv("DEMO_PASSWORD", raising=False)
    settings.DEBUG = True
    call_command("create_demo_users")
    response = client.post(
        reverse("accounts:login"), {"username": "admin", "password": "fairmetric"}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("home")
    home = client.get(reverse("home"))
    assert home.status_code == 200
    assert b"Your studies" in home.content
    assert b"Administration" in home.content


@pytest.mark.django_db
def test_wrong_password_shows_a_form_error(client, settings):
    settings.DEBUG = True
    call_command("create_demo_users")
    response = client.post(reverse("accounts:login"), {"username": "admin", "password": "nope"})
    assert response.status_code == 200
    assert b'class="error"' in response.content


@pytest.mark.django_db
def test_demo_users_are_idempotent_and_honour_demo_password(monkeypatch, settings):
    settings.DEBUG = True
    monkeypatch.setenv("DEMO_PASSWORD", "s3cret-demo")
    call_command("create_demo_users")
    call_command("create_demo_users")
    users = get_user_model().objects.filter(username__in=["admin", "reviewer", "annotator"])
    assert users.count() == 3
    admin = users.get(username="admin")
    assert admin.is_superuser
    assert admin.check_password("s3cret-demo")
    assert not users.get(username="annotator").is_staff


@pytest.mark.django_db
def test_demo_users_are_refused_without_debug(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="development only"):
        call_command("create_demo_users")
    assert not get_user_model().objects.exists()


@pytest.mark.django_db
def test_logout_is_a_post_and_returns_to_login(admin_client):
    response = admin_client.post(reverse("accounts:logout"))
    assert response.status_code == 302
    assert admin_client.get(reverse("home")).status_code == 302


@pytest.mark.django_db
def test_healthz_reports_the_database(client):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_the_favicon_is_served_not_a_404(client):
    """Browsers ask for /favicon.ico whatever the page links: it was a 404 in every log."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg")
