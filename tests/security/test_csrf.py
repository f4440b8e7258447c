"""CSRF: every state-changing form and session-authenticated API call is refused without the
token (403, nothing written) and accepted with it. The cases come from the authorization
matrix, so a new POST/PATCH/DELETE endpoint is covered as soon as it has a matrix row."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.urls import reverse
from rest_framework.test import APIClient

from .conftest import ROLES
from .matrix import MATRIX

UNSAFE = ["post", "put", "patch", "delete"]


def _row_counts() -> dict[str, int]:
    return {
        model._meta.label: model.objects.count()
        for label in ("spaces", "annotation", "learning", "auth", "audit")
        for model in apps.get_app_config(label).get_models()
    }


def _cases():
    for name, row in MATRIX.items():
        for method in UNSAFE:
            allowed = row.methods.get(method)
            if not allowed:
                continue
            # The first role (ann_a, the owner, last) that the matrix lets through.
            role = (
                "anon"
                if name in {"accounts:login", "accounts:logout"}
                else next(r for r in ROLES if r != "anon" and allowed[r] not in {401, 403, 404})
            )
            yield pytest.param(name, method, role, id=f"{name}-{method.upper()}")


CASES = list(_cases())


def test_every_unsafe_endpoint_is_checked():
    assert {c.values[0] for c in CASES} >= {
        "accounts:login",
        "accounts:logout",
        "api-judgments",
        "api-judgment",
        "api-groups",
        "api-group",
        "spaces:upload",
        "learning:version-publish",
        "accounts:tokens",
        "accounts:token-revoke",
    }


def _client(world, role) -> APIClient:
    client = APIClient(enforce_csrf_checks=True)
    if role != "anon":
        client.force_login(world.users[role])
    return client


def _send(world, client, name, method, role, token: str | None):
    row = MATRIX[name]
    data = row.body(world, role) if row.body else {}
    headers = {}
    if token is not None:
        if row.fmt == "json" or method != "post":
            headers["HTTP_X_CSRFTOKEN"] = token
        else:
            data = {**data, "csrfmiddlewaretoken": token}
    return getattr(client, method)(row.url(world), data, format=row.fmt, **headers)


@pytest.mark.parametrize(("name", "method", "role"), CASES)
def test_without_the_token_refused_and_nothing_written(world, name, method, role):
    client = _client(world, role)
    before = _row_counts()
    response = _send(world, client, name, method, role, token=None)
    assert response.status_code == 403, response.content[:300]
    assert b"CSRF" in response.content
    assert _row_counts() == before

    # The same request with the token from a page gets through (the check can fail).
    client.get(reverse("accounts:login"))
    token = client.cookies["csrftoken"].value
    response = _send(world, client, name, method, role, token=token)
    assert response.status_code == MATRIX[name].methods[method][role], response.content[:300]


def test_admin_forms_need_the_token(world):
    client = _client(world, "su")
    url = reverse("admin:annotation_membership_add")
    data = {"user": world.users["ann_b"].pk, "study": world.study_a.pk, "role": "annotator"}
    before = _row_counts()
    assert client.post(url, data).status_code == 403
    assert _row_counts() == before
