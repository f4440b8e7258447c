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

import importlib
import inspect
import pkgutil
import re
from datetime import timedelta

import pytest
from django import forms
from django.contrib import admin
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import api_token_create
from annotation.models import Membership
from spaces.models import EmbeddingSpace
from tests.annotation.factories import make_space, make_study

from .conftest import ROLES, UNUSED_SPACE, World
from .matrix import MATRIX, Row
from .matrix.policies import METHODS, PUBLIC, A
from .matrix.spaces_pages import OFFERED, SPACE_USES, SPACES, study_c
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


def _api_rows_of_a(world) -> list[str]:
    """The API rows whose URL names study A or one of its versions."""
    prefixes = (f"/api/studies/{A(world)}/", "/api/versions/")
    return [name for name, row in MATRIX.items() if row.url(world).startswith(prefixes)]


@pytest.mark.parametrize("role", ["rev_a", "adm_a", "su"])
def test_a_token_limited_to_another_study_reaches_nothing_of_study_a(world, role):
    """Every method of every API row of study A answers 404 (as to an outsider) to a token of
    one of A's reviewers, admins or staff limited to study C (a version's unlisted methods 405,
    as to everyone); the study list shows C only; creating a study (no study yet) is refused."""
    other = make_study(space=world.study_a.space, name="Study C")
    Membership.objects.create(study=other, user=world.users[role], role=Membership.Role.ADMIN)
    _, key = api_token_create(user=world.users[role], name="c only", study_ids=[other.pk])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    rows = _api_rows_of_a(world)
    assert len(rows) > 20
    for name in rows:
        row = MATRIX[name]
        for method in METHODS:
            url = row.url(world)
            data = row.body(world, role) if row.body and method != "get" else {}
            response = getattr(client, method)(url, data, format=row.fmt)
            # A version's URL names no study: its methods are looked at before the study.
            listed = method in row.methods or url.startswith("/api/studies/")
            expected = 404 if listed else 405
            assert response.status_code == expected, (name, method, response.status_code)
    listed = client.get(reverse("api-studies")).json()
    assert [s["id"] for s in listed] == [other.pk]
    assert client.get(reverse("api-study", args=[other.pk])).status_code == 200
    body = {"name": "new", "space": world.study_a.space_id, "mode": "pairs"}
    assert client.post(reverse("api-studies"), body, format="json").status_code == 403
    items = client.get(reverse("api-items"), {"space": world.study_a.space_id, "q": "w"})
    assert items.status_code == 200  # C is on A's space: its items are C's items


def test_an_expired_token_is_refused_everywhere_with_its_expiry(world):
    _, key = api_token_create(
        user=world.users["rev_a"], name="soon", expires_at=timezone.now() + timedelta(minutes=1)
    )
    ApiToken.objects.filter(user=world.users["rev_a"], name="soon").update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    for name in [*_api_rows_of_a(world), "api-studies", "api-items"]:
        response = client.get(MATRIX[name].url(world))
        assert response.status_code == 401, name
        assert response.json()["detail"].startswith("This token expired on"), name


# --- Spaces: every field and parameter that names one follows the sharing rule ---------------


@pytest.fixture
def spaces(world) -> dict[str, int]:
    """The four spaces of ``SPACE_USES`` and study C (adm_a its admin, empty, on the own space);
    the world's unused space (of the deletion rows) is not one of them."""
    EmbeddingSpace.objects.filter(name=UNUSED_SPACE).delete()
    shared = make_space(name="shared space", seed=1)
    shared.shared_with.add(world.users["adm_a"])
    admins = make_space(name="admins' space", seed=2)
    EmbeddingSpace.objects.filter(pk=admins.pk).update(shared_with_study_admins=True)
    foreign = make_space(name="foreign space", seed=3)
    EmbeddingSpace.objects.filter(pk=foreign.pk).update(owner=world.users["su"])
    study = make_study(space=world.study_a.space, name="Study C")
    Membership.objects.create(study=study, user=world.users["adm_a"], role=Membership.Role.ADMIN)
    ids = [world.study_a.space_id, shared.pk, admins.pk, foreign.pk]
    return dict(zip(SPACES, ids, strict=True))


@pytest.mark.parametrize("use", SPACE_USES, ids=[u.where for u in SPACE_USES])
def test_every_use_of_a_space_follows_the_sharing_rule(world, spaces, use):
    got = {
        role: {label: use.use(world, role, spaces, spaces[label]) for label in SPACES}
        for role in use.expected
    }
    assert got == use.expected
    assert set(use.expected) == set(ROLES)


def test_the_study_form_offers_only_the_spaces_one_may_use(world, spaces):
    names = {pk: label for label, pk in spaces.items()}
    url = reverse("annotation:study-settings", args=[study_c(world).pk])
    for role, offered in OFFERED.items():
        form = world.client(role).get(url).context["form"]
        listed = {names[pk] for pk in form.fields["space"].queryset.values_list("pk", flat=True)}
        assert listed - {None} == offered, role
        assert set(form.fields["space"].queryset.values_list("pk", flat=True)) <= set(names)


def _space_fields() -> set[str]:
    """Every form field of our apps that chooses a space, as ``form:<module>.<Form>.<field>``."""
    found = set()
    for app in ("annotation", "learning", "spaces", "accounts", "audit"):
        package = importlib.import_module(app)
        for info in pkgutil.walk_packages(package.__path__, f"{app}."):
            if not info.name.endswith("forms"):
                continue
            module = importlib.import_module(info.name)
            for name, form in inspect.getmembers(module, inspect.isclass):
                if not issubclass(form, forms.BaseForm) or form.__module__ != module.__name__:
                    continue
                for field_name, field in form.base_fields.items():
                    queryset = getattr(field, "queryset", None)
                    if queryset is not None and queryset.model is EmbeddingSpace:
                        found.add(f"form:{module.__name__}.{name}.{field_name}")
    return found


def _space_parameters() -> set[str]:
    """Every API parameter or body property named like a space, as ``api:<path>?<name>``."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = set()
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if "space" in parameter["name"]:
                    found.add(f"api:{path}?{parameter['name']}")
            body = operation.get("requestBody", {}).get("content", {})
            for media in body.values():
                ref = media.get("schema", {}).get("$ref", "")
                component = schema["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {})
                for prop in component.get("properties", {}):
                    if "space" in prop:
                        found.add(f"api:{path}?{prop}")
    return found


def test_every_field_and_parameter_that_names_a_space_has_rows():
    covered = {use.where.split(" (")[0] for use in SPACE_USES}
    found = _space_fields() | _space_parameters()
    assert "form:annotation.setup.forms.StudyForm.space" in found
    assert "api:/api/items/?space" in found
    assert found <= covered, f"uses of a space without SPACE_USES rows: {sorted(found - covered)}"
    assert covered <= found, f"SPACE_USES rows for fields that no longer exist: {covered - found}"


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
