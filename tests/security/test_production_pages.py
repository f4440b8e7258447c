"""No debug pages in production: with DEBUG off, errors render the app's own plain pages."""

from __future__ import annotations

import importlib

from django.test import Client
from django.urls import clear_url_caches, reverse

TRACEBACK_MARKERS = [
    b"Traceback",
    b"secret internal detail",
    b"technical_500",
    b"settings.py",
    b"DEBUG = True",
]


def _plain(response, title: bytes):
    assert title in response.content, response.content[:400]
    for marker in TRACEBACK_MARKERS:
        assert marker not in response.content


def test_404_is_the_apps_page(world, settings):
    assert settings.DEBUG is False
    _plain(world.client("ann_a").get("/no/such/page/"), b"Not found")
    _plain(
        world.client("ann_b").get(reverse("annotation:study-detail", args=[world.study_a.pk])),
        b"Not found",
    )


def test_403_says_why_without_details(world):
    response = world.client("ann_a").get(reverse("annotation:review", args=[world.study_a.pk]))
    assert response.status_code == 403
    _plain(response, b"Only reviewers and admins of this study can review it.")


def test_400_for_a_bad_host(world):
    response = Client().get("/", HTTP_HOST="evil.example.org")
    assert response.status_code == 400
    _plain(response, b"Bad request")


def test_500_is_plain_and_hides_the_error(world, settings):
    settings.ROOT_URLCONF = "tests.security.urls_boom"
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500
    _plain(response, b"Something went wrong")


def test_csrf_failure_page_is_plain(world):
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("accounts:login"), {"username": "x", "password": "y"})
    assert response.status_code == 403
    _plain(response, b"The form expired")


def test_media_is_not_served_without_debug(settings):
    import fairmetric_site.urls as site_urls

    original = site_urls.urlpatterns
    settings.DEBUG = False
    try:
        routes = [str(p.pattern) for p in importlib.reload(site_urls).urlpatterns]
        assert not any(route.startswith("media/") for route in routes)
        assert "admin/" in routes  # the rest of the site is still there
    finally:
        site_urls.urlpatterns = original
        clear_url_caches()
