"""Matrix rows of the embedding-space pages (uploads of vectors, records and texts, a space's
sharing): Django staff only; and every form field and API parameter that names a space, with
the status each role gets for a space of its own, shared with it, shared with every study admin,
or foreign (``SPACE_USES``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import reverse

from ..conftest import World, unused_space
from .policies import NON_STAFF, PAGE_GATE, STAFF_GATE, STAFF_PAGE, Row, record_study, statuses


def record_space(world: World) -> int:
    """Study A's space as a record space (``record_study``)."""
    record_study(world)
    return world.study_a.space_id


ROWS: dict[str, Row] = {
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
    "spaces:sharing": Row(
        lambda w: reverse("spaces:sharing", args=[w.study_a.space_id]),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 302)},
        STAFF_GATE,
    ),
    "spaces:delete": Row(  # a fresh space of no study, owned by adm_a: its owner and staff
        lambda w: reverse("spaces:delete", args=[unused_space(w).pk]),
        {
            "get": statuses(302, 403, 403, 403, 200, 200),
            "post": statuses(302, 403, 403, 403, 302, 302),
        },
        PAGE_GATE,
    ),
    "spaces:texts-upload": Row(
        lambda w: reverse("spaces:texts-upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
}


# --- Every place that names a space: the sharing rule (annotation.access.usable_spaces) ---------
#
# Four spaces: study A's own ("own"; studies A and B are on it), one shared with adm_a by name
# ("shared"), one shared with every study admin ("admins"), one owned by the superuser and
# shared with nobody ("foreign"). Study C is an empty study of which adm_a is the only member
# (its admin), on the own space: attaching a space is changing C's space.

SPACES = ("own", "shared", "admins", "foreign")


@dataclass(frozen=True)
class SpaceUse:
    """A form field or API parameter that names a space (``where``, as the completeness check
    finds it), how a role uses it with a space (returns the status), and the status each role
    gets for each of the four spaces."""

    where: str
    use: Callable[[World, str, dict, int], int]
    expected: dict[str, dict[str, int]]


def _same(status: dict[str, int]) -> dict[str, dict[str, int]]:
    return dict.fromkeys(SPACES, status)


def study_c(world: World):
    return type(world.study_a).objects.get(name="Study C")


def _settings_post(world: World, role: str, spaces: dict, space_id: int) -> int:
    study = study_c(world)
    type(study).objects.filter(pk=study.pk).update(space_id=spaces["own"])
    body = {"name": study.name, "instructions": "", "mode": "pairs", "pool": "all"}
    body |= {"strategy": "random", "overlap": 2, "gold_rate": 0, "target_per_annotator": 20}
    url = reverse("annotation:study-settings", args=[study.pk])
    return world.client(role).post(url, body | {"space": space_id}).status_code


def _new_post(world: World, role: str, spaces: dict, space_id: int) -> int:
    body = {"name": f"new on {space_id}", "instructions": "", "mode": "pairs", "pool": "all"}
    body |= {"strategy": "random", "overlap": 1, "gold_rate": 0, "target_per_annotator": 5}
    return world.client(role).post(reverse("annotation:study-new"), body | {"space": space_id})


def _new_status(world, role, spaces, space_id) -> int:
    return _new_post(world, role, spaces, space_id).status_code


def _items(world: World, role: str, spaces: dict, space_id: int) -> int:
    return world.client(role).get(reverse("api-items") + f"?space={space_id}&q=w").status_code


def _api_new(world: World, role: str, spaces: dict, space_id: int) -> int:
    body = {"name": f"api on {space_id}", "space": space_id, "mode": "pairs"}
    return world.client(role).post(reverse("api-studies"), body, format="json").status_code


def _api_settings(world: World, role: str, spaces: dict, space_id: int) -> int:
    study = study_c(world)
    type(study).objects.filter(pk=study.pk).update(space_id=spaces["own"])
    url = reverse("api-study", args=[study.pk])
    return world.client(role).patch(url, {"space": space_id}, format="json").status_code


ADMIN_USES = {"own": 302, "shared": 302, "admins": 302, "foreign": 400}
SPACE_USES: list[SpaceUse] = [
    SpaceUse(
        "form:annotation.setup.forms.StudyForm.space (study settings)",
        _settings_post,
        {
            "anon": _same(302),
            "ann_a": _same(404),
            "ann_b": _same(404),
            "rev_a": _same(404),
            "adm_a": ADMIN_USES,
            "su": _same(302),
        },
    ),
    SpaceUse(
        "form:annotation.setup.forms.StudyForm.space (new study)",
        _new_status,
        {
            "anon": _same(302),
            **{role: _same(403) for role in NON_STAFF},
            "su": _same(302),
        },
    ),
    SpaceUse(
        "api:/api/studies/?space",
        _api_new,
        {"anon": _same(401), **{role: _same(403) for role in NON_STAFF}, "su": _same(201)},
    ),
    SpaceUse(
        "api:/api/studies/{study_id}/?space",
        _api_settings,
        {
            "anon": _same(401),
            "ann_a": _same(404),
            "ann_b": _same(404),
            "rev_a": _same(404),
            "adm_a": {"own": 200, "shared": 200, "admins": 200, "foreign": 400},
            "su": _same(200),
        },
    ),
    SpaceUse(
        "api:/api/items/?space",
        _items,
        {
            "anon": _same(401),
            "ann_a": {"own": 200, "shared": 404, "admins": 404, "foreign": 404},
            "ann_b": {"own": 200, "shared": 404, "admins": 404, "foreign": 404},
            "rev_a": {"own": 200, "shared": 404, "admins": 404, "foreign": 404},
            "adm_a": {"own": 200, "shared": 200, "admins": 200, "foreign": 404},
            "su": _same(200),
        },
    ),
]
# The spaces each role is offered by the study settings form of study C (its admin and staff).
OFFERED = {"adm_a": {"own", "shared", "admins"}, "su": set(SPACES)}
