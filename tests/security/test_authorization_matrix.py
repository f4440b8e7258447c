"""Who may do what: every URL pattern × method × role, with the status each role gets.

Roles: anonymous, annotator of study A (owner of A's judgment and group), annotator of study B,
reviewer of A, admin of A (a membership role, not Django staff), and a superuser. The rows are
in tests/security/matrix/ (one module per area; ``MATRIX`` merges them). The URL patterns are
enumerated from the resolver (tests/security/routes.py): a new URL without a row in ``MATRIX``
fails ``test_every_url_pattern_has_a_matrix_row``. Methods a row does not list must be refused:
405 for those who pass the row's gate, and the gate's answer (login redirect, 401, 403) for
others.
"""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import RequestFactory
from django.urls import reverse

from .conftest import ROLES, World
from .matrix import MATRIX, Row
from .matrix.policies import METHODS, PUBLIC
from .routes import DEBUG_ONLY, admin_patterns, app_patterns


def test_every_url_pattern_has_a_matrix_row():
    missing = [
        f"{route} ({name})"
        for route, name in app_patterns()
        if name not in MATRIX and route not in DEBUG_ONLY
    ]
    assert not missing, f"URL patterns without an authorization-matrix row: {missing}"
    stale = set(MATRIX) - {name for _, name in app_patterns()}
    assert not stale, f"matrix rows for URLs that no longer exist: {stale}"


def _request(world: World, row: Row, role: str, method: str):
    client = world.client(role)
    url = row.url(world)
    if method == "get":
        return client.get(url)
    data = row.body(world, role) if row.body else {}
    return getattr(client, method)(url, data, format=row.fmt)


def _cases():
    for name, _row in MATRIX.items():
        for method in METHODS:
            yield pytest.param(name, method, id=f"{name}-{method.upper()}")


@pytest.mark.parametrize(("name", "method"), list(_cases()))
def test_matrix(world, name, method):
    row = MATRIX[name]
    allowed = row.methods.get(method)
    got, expected = {}, {}
    for role in ROLES:  # A's owner (ann_a) last: others' writes must not need its objects gone
        expected[role] = allowed[role] if allowed else row.gate.get(role, 405)
        response = _request(world, row, role, method)
        got[role] = response.status_code
        if got[role] == 302 and expected[role] == 302 and role == "anon" and allowed != PUBLIC:
            assert reverse("accounts:login") in response["Location"], response["Location"]
    assert got == expected


def test_the_api_answers_a_token_as_it_answers_a_session(world):
    for role in ["ann_a", "ann_b", "rev_a"]:
        client = world.token_client(role)
        for name in ["api-study", "api-judgments", "api-export-judgments", "api-version"]:
            status = client.get(MATRIX[name].url(world)).status_code
            assert status == MATRIX[name].methods["get"][role], (role, name)
    bad = world.token_client("ann_a")
    bad.credentials(HTTP_AUTHORIZATION="Bearer fm_" + "x" * 43)
    response = bad.get(MATRIX["api-study"].url(world))
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid or revoked token."


# --- The Django admin: staff only --------------------------------------------------------------

ADMIN_OPEN = {"admin:login", "admin:jsi18n", "admin:logout"}


def _admin_url(route: str) -> str:
    """A concrete URL for an admin route (object ids and content types as '1')."""
    return "/" + re.sub(r"<(?:\w+:)?\w+>", "1", route).replace("^", "").replace("$", "")


def test_every_admin_url_sends_everyone_but_staff_to_the_admin_login(world):
    patterns = [(r, n) for r, n in admin_patterns() if n not in ADMIN_OPEN]
    assert len(patterns) > 50
    for role in ["anon", "ann_a", "rev_a", "adm_a"]:
        client = world.client(role)
        for route, _name in patterns:
            url = _admin_url(route)
            response = client.get(url)
            assert response.status_code == 302, (role, url, response.status_code)
            assert response["Location"].startswith(reverse("admin:login")), (role, url)


def test_superusers_open_every_admin_list_and_add_form(world):
    client = world.client("su")
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url
        add = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
        assert add.status_code == (
            200 if model_admin.has_add_permission(_su_request(world)) else 403
        ), meta.label


def _su_request(world):
    request = RequestFactory().get("/admin/")
    request.user = world.users["su"]
    return request
