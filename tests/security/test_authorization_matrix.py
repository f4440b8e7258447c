"""Who may do what: every URL pattern × method × role, with the status each role gets.

Roles: anonymous, annotator of study A (owner of A's judgment and group), annotator of study B,
reviewer of A, admin of A (a membership role, not Django staff), and a superuser. The URL
patterns are enumerated from the resolver: a new URL without a row in ``MATRIX`` fails
``test_every_url_pattern_has_a_matrix_row``. Methods a row does not list must be refused: 405
for those who pass the row's gate, and the gate's answer (login redirect, 401, 403) for others.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Membership

from .conftest import ROLES, World

METHODS = ["get", "post", "put", "patch", "delete"]
NON_STAFF = ["ann_a", "ann_b", "rev_a", "adm_a"]


def statuses(anon, ann_a, ann_b, rev_a, adm_a, su) -> dict[str, int]:
    return {"anon": anon, "ann_a": ann_a, "ann_b": ann_b, "rev_a": rev_a, "adm_a": adm_a, "su": su}


# Who passes: the common policies (the status each role gets for an allowed method).
PUBLIC = statuses(200, 200, 200, 200, 200, 200)
LOGGED_IN = statuses(302, 200, 200, 200, 200, 200)
# One rule (annotation.access): outsiders of a study get 404, as for a study that does not exist;
# members whose role does not allow the action get 403.
MEMBER_PAGE = statuses(302, 200, 404, 200, 200, 200)
REVIEWER_PAGE = statuses(302, 403, 404, 200, 200, 200)
STAFF_PAGE = statuses(302, 403, 403, 403, 403, 200)
MEMBER_API = statuses(401, 200, 404, 200, 200, 200)
EXPORT_API = statuses(401, 403, 404, 200, 200, 200)

# Refused before the method is looked at (the rest get 405 for an unlisted method).
PAGE_GATE = {"anon": 302}
STAFF_GATE = {"anon": 302, **dict.fromkeys(NON_STAFF, 403)}
API_GATE = {"anon": 401}
# API views on a study check access before the method (DRF): outsiders, then reviewers' rights.
STUDY_API_GATE = {"anon": 401, "ann_b": 404}
EXPORT_STUDY_GATE = {"anon": 401, "ann_a": 403, "ann_b": 404}


@dataclass
class Row:
    url: Callable[[World], str]
    methods: dict[str, dict[str, int]]
    gate: dict[str, int] = field(default_factory=dict)
    body: Callable[[World, str], dict] | None = None  # the request body of a role
    fmt: str = "multipart"


def A(world: World) -> int:
    return world.study_a.pk


def record_study(world: World) -> int:
    """Study A, its space given a feature map (as a record space has)."""
    spec = {
        "format": "fairmetric.featuremap",
        "version": 1,
        "excluded": [],
        "features": [{"column": "age", "kind": "numeric", "mean": 40.0, "scale": 10.0}],
        "feature_names": ["age"],
    }
    type(world.study_a.space).objects.filter(pk=world.study_a.space_id).update(
        kind="records", feature_map=spec
    )
    return A(world)


def record_space(world: World) -> int:
    """Study A's space as a record space (``record_study``)."""
    record_study(world)
    return world.study_a.space_id


def judgment_body(world: World, role: str) -> dict:
    return {
        "item_a": world.items[2].pk,
        "item_b": world.items[3].pk,
        "label": "comparable",
        "client_id": str(uuid.uuid4()),
    }


def extra_membership(world: World) -> int:
    """The second reviewer of A, for the removal row: made a member again after a removal."""
    user = world.users["extra"]
    return Membership.objects.get_or_create(study=world.study_a, user=user, role="reviewer")[0].pk


def ann_a_membership(world: World) -> int:
    return Membership.objects.get(study=world.study_a, user=world.users["ann_a"]).pk


# Set-up pages: reviewers read, admins of the study (and staff) write; annotators see none.
SETUP_PAGE = REVIEWER_PAGE
SETUP_POST_EMPTY = statuses(302, 403, 404, 403, 400, 400)  # an empty form: 400 with errors
SETUP_POST_DONE = statuses(302, 403, 404, 403, 302, 302)


def setup_row(name: str) -> Row:
    return Row(
        lambda w: reverse(name, args=[A(w)]),
        {"get": SETUP_PAGE, "post": SETUP_POST_EMPTY},
        PAGE_GATE,
    )


MATRIX: dict[str, Row] = {
    "home": Row(lambda w: reverse("home"), {"get": LOGGED_IN}, PAGE_GATE),
    "healthz": Row(lambda w: reverse("healthz"), {"get": PUBLIC}),
    "accounts:login": Row(
        lambda w: reverse("accounts:login"),
        {"get": PUBLIC, "post": PUBLIC},
        body=lambda w, r: {"username": f"nobody-{r}", "password": "wrong"},
    ),
    "accounts:logout": Row(
        lambda w: reverse("accounts:logout"), {"post": statuses(302, 302, 302, 302, 302, 302)}
    ),
    "schema": Row(lambda w: reverse("schema"), {"get": PUBLIC}),
    "api-docs": Row(lambda w: reverse("api-docs"), {"get": PUBLIC}),
    # --- annotation API
    "api-studies": Row(
        lambda w: reverse("api-studies"), {"get": statuses(401, 200, 200, 200, 200, 200)}, API_GATE
    ),
    "api-study": Row(
        lambda w: reverse("api-study", args=[A(w)]), {"get": MEMBER_API}, STUDY_API_GATE
    ),
    "api-next-pair": Row(
        lambda w: reverse("api-next-pair", args=[A(w)]), {"get": MEMBER_API}, STUDY_API_GATE
    ),
    "api-judgments": Row(
        lambda w: reverse("api-judgments", args=[A(w)]),
        {"get": MEMBER_API, "post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=judgment_body,
        fmt="json",
    ),
    "api-judgments-batch": Row(  # 200 with one result per answer (each stored on its own)
        lambda w: reverse("api-judgments-batch", args=[A(w)]),
        {"post": statuses(401, 200, 404, 200, 200, 200)},
        STUDY_API_GATE,
        body=lambda w, r: {"answers": [judgment_body(w, r)]},
        fmt="json",
    ),
    "api-skips": Row(
        lambda w: reverse("api-skips", args=[A(w)]),
        {"post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=lambda w, r: {"item_a": w.items[7].pk, "item_b": w.items[8].pk},
        fmt="json",
    ),
    "api-comments": Row(
        lambda w: reverse("api-comments", args=[A(w)]),
        {"post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=lambda w, r: {
            "item_a": w.items[7].pk,
            "item_b": w.items[8].pk,
            "text": f"note by {r}",
            "client_id": str(uuid.uuid4()),
        },
        fmt="json",
    ),
    "api-judgment": Row(  # undo: only one's own answer
        lambda w: reverse("api-judgment", args=[A(w), w.judgment.pk]),
        {"delete": statuses(401, 204, 404, 403, 403, 403)},
        STUDY_API_GATE,
    ),
    "api-groups": Row(
        lambda w: reverse("api-groups", args=[A(w)]),
        {"get": MEMBER_API, "post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=lambda w, r: {"name": f"group of {r}", "members": [w.items[5].pk, w.items[6].pk]},
        fmt="json",
    ),
    "api-group": Row(  # the creator (ann_a) and reviewers/admins may edit
        lambda w: reverse("api-group", args=[A(w), w.group.pk]),
        {"get": MEMBER_API, "patch": MEMBER_API},
        STUDY_API_GATE,
        body=lambda w, r: {"name": f"renamed by {r}"},
        fmt="json",
    ),
    "api-suggestions": Row(
        lambda w: reverse("api-suggestions", args=[A(w)]), {"get": MEMBER_API}, STUDY_API_GATE
    ),
    "api-items": Row(
        lambda w: reverse("api-items") + f"?study={A(w)}&q=w", {"get": MEMBER_API}, API_GATE
    ),
    # --- annotation pages
    "annotation:study-list": Row(
        lambda w: reverse("annotation:study-list"), {"get": LOGGED_IN}, PAGE_GATE
    ),
    "annotation:study-detail": Row(
        lambda w: reverse("annotation:study-detail", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    "annotation:label": Row(
        lambda w: reverse("annotation:label", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    "annotation:groups": Row(
        lambda w: reverse("annotation:groups", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    "annotation:review": Row(
        lambda w: reverse("annotation:review", args=[A(w)]), {"get": REVIEWER_PAGE}, PAGE_GATE
    ),
    "annotation:study-done": Row(
        lambda w: reverse("annotation:study-done", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    # --- study set-up
    "annotation:study-new": Row(
        lambda w: reverse("annotation:study-new"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        PAGE_GATE,  # the method is checked before the staff rule
    ),
    "annotation:markdown-preview": Row(
        lambda w: reverse("annotation:markdown-preview"),
        {"post": LOGGED_IN},
        PAGE_GATE,
        body=lambda w, r: {"text": "*hi*"},
    ),
    "annotation:study-settings": setup_row("annotation:study-settings"),
    "annotation:study-items": setup_row("annotation:study-items"),
    "annotation:study-pairs": setup_row("annotation:study-pairs"),
    "annotation:study-gold": setup_row("annotation:study-gold"),
    "annotation:study-members": setup_row("annotation:study-members"),
    "annotation:study-duplicate": Row(
        lambda w: reverse("annotation:study-duplicate", args=[A(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"name": f"copy by {r}"},
    ),
    "annotation:study-archive": Row(
        lambda w: reverse("annotation:study-archive", args=[A(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"archive": "0"},
    ),
    "annotation:study-member": Row(
        lambda w: reverse("annotation:study-member", args=[A(w), ann_a_membership(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"role": "annotator", "target": "7"},
    ),
    "annotation:study-member-remove": Row(
        lambda w: reverse("annotation:study-member-remove", args=[A(w), extra_membership(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
    ),
    "accounts:invitation": Row(  # an invalid link: the page that says so, to everyone
        lambda w: reverse("accounts:invitation", args=["MQ", "set-password"]),
        {"get": PUBLIC, "post": PUBLIC},
    ),
    # --- embedding spaces (Django staff only)
    "spaces:list": Row(lambda w: reverse("spaces:list"), {"get": STAFF_PAGE}, STAFF_GATE),
    "spaces:upload": Row(
        lambda w: reverse("spaces:upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    "spaces:import": Row(
        lambda w: reverse("spaces:import", args=[w.embedding_import.pk]),
        {"get": STAFF_PAGE},
        STAFF_GATE,
    ),
    "spaces:import-status": Row(
        lambda w: reverse("spaces:import-status", args=[w.embedding_import.pk]),
        {"get": STAFF_PAGE},
        STAFF_GATE,
    ),
    "spaces:records-upload": Row(
        lambda w: reverse("spaces:records-upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    "spaces:records-columns": Row(
        lambda w: reverse("spaces:records-columns", args=[w.records_import.pk]),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    "spaces:records-shown": Row(
        lambda w: reverse("spaces:records-shown", args=[record_space(w)]),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 302)},
        STAFF_GATE,
    ),
    "spaces:texts-upload": Row(
        lambda w: reverse("spaces:texts-upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    # --- export API (reviewers and admins)
    "api-feature-map": Row(
        lambda w: reverse("api-feature-map", args=[record_study(w)]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-version": Row(
        lambda w: reverse("api-version", args=[w.version.pk]), {"get": EXPORT_API}, API_GATE
    ),
    "api-version-sigma": Row(
        lambda w: reverse("api-version-sigma", args=[w.version.pk, "npy"]),
        {"get": EXPORT_API},
        API_GATE,
    ),
    "api-published": Row(
        lambda w: reverse("api-published", args=[A(w), "face"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-published-sigma": Row(
        lambda w: reverse("api-published-sigma", args=[A(w), "face", "json"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-export-judgments": Row(
        lambda w: reverse("api-export-judgments", args=[A(w), "csv"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-export-groups": Row(
        lambda w: reverse("api-export-groups", args=[A(w), "jsonl"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    # --- learning pages
    "learning:study-dashboard": Row(
        lambda w: reverse("learning:study-dashboard", args=[A(w)]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:study-dashboard-status": Row(
        lambda w: reverse("learning:study-dashboard-status", args=[A(w)]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:study-weat": Row(
        lambda w: reverse("learning:study-weat", args=[A(w)]), {"get": REVIEWER_PAGE}, PAGE_GATE
    ),
    "learning:study-weat-test": Row(
        lambda w: reverse("learning:study-weat-test", args=[A(w), w.weat_test.pk]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:study-drift": Row(
        lambda w: reverse("learning:study-drift", args=[A(w)]), {"get": REVIEWER_PAGE}, PAGE_GATE
    ),
    "learning:version-compare": Row(
        lambda w: reverse("learning:version-compare") + f"?a={w.version.pk}&b={w.other_version.pk}",
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:version-detail": Row(
        lambda w: reverse("learning:version-detail", args=[w.version.pk]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:version-publish": Row(  # study admins (membership) and superusers
        lambda w: reverse("learning:version-publish", args=[w.other_version.pk]),
        {"post": statuses(302, 403, 404, 403, 302, 302)},
        PAGE_GATE,
    ),
    "accounts:tokens": Row(  # everybody lists their tokens; reviewers/admins/staff create (PRG)
        lambda w: reverse("accounts:tokens"),
        {"get": LOGGED_IN, "post": statuses(302, 403, 403, 302, 302, 302)},
        PAGE_GATE,
        body=lambda w, r: {"name": f"job of {r}"},
    ),
    "accounts:token-revoke": Row(  # only one's own token (ann_a's here)
        lambda w: reverse("accounts:token-revoke", args=[w.token_ids["ann_a"]]),
        {"post": statuses(302, 302, 404, 404, 404, 404)},
        PAGE_GATE,
    ),
}
# Served only with DEBUG on (the development server); production has no such route.
DEBUG_ONLY = {"media/<path:path>"}


def _patterns(patterns=None, prefix: str = "", namespace: str | None = None):
    """(route, qualified name) of every URL pattern."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            ns = namespace
            if pattern.namespace:
                ns = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
            yield from _patterns(pattern.url_patterns, prefix + str(pattern.pattern), ns)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
            yield prefix + str(pattern.pattern), name


def _app_patterns():
    return [(route, name) for route, name in _patterns() if not route.startswith("admin/")]


def test_every_url_pattern_has_a_matrix_row():
    missing = [
        f"{route} ({name})"
        for route, name in _app_patterns()
        if name not in MATRIX and route not in DEBUG_ONLY
    ]
    assert not missing, f"URL patterns without an authorization-matrix row: {missing}"
    stale = set(MATRIX) - {name for _, name in _app_patterns()}
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


def _admin_patterns():
    return [(route, name) for route, name in _patterns() if route.startswith("admin/")]


def _admin_url(route: str) -> str:
    """A concrete URL for an admin route (object ids and content types as '1')."""
    import re

    return "/" + re.sub(r"<(?:\w+:)?\w+>", "1", route).replace("^", "").replace("$", "")


def test_every_admin_url_sends_everyone_but_staff_to_the_admin_login(world):
    patterns = [(r, n) for r, n in _admin_patterns() if n not in ADMIN_OPEN]
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
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = world.users["su"]
    return request
